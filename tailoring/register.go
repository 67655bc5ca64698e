package tailoring

import "github.com/fairdp/fairdp/trainer"

// Budget tailoring and its baseline run from a trainer.Config
// (trainer.RunConfig, `fairdp train --algo tailoring|dpnose`).
func init() {
	trainer.RegisterPipeline("tailoring", Run)
	trainer.RegisterPipeline("dpnose", Run)
	// Reports written when Config was trainer.Config's field Tailoring
	// may carry that Go field name as the key.
	trainer.RegisterSection[Config](SectionKey, "Tailoring")
}
