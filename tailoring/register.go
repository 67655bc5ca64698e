package tailoring

import "github.com/fairdp/fairdp/trainer"

// Budget tailoring and its baseline run from a trainer.Config
// (trainer.RunConfig, `fairdp train --algo tailoring|dpnose`).
func init() {
	trainer.RegisterPipeline("tailoring", Run)
	trainer.RegisterPipeline("dpnose", Run)
	trainer.RegisterSection[Config](SectionKey)
}
