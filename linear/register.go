package linear

import "fairdp/trainer"

// The post-processing and oracle pipelines run from a trainer.Config
// (trainer.RunConfig, `fairdp train --algo postproc|oracle`).
func init() {
	trainer.RegisterPipeline("postproc", RunJagielski)
	trainer.RegisterPipeline("oracle", RunJagielski)
}
