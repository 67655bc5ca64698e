package tailoring

import "github.com/fairdp/fairdp/trainer"

// The --algo names (trainer.Config.Algo) of budget tailoring (its DPSE
// method) and of its uniform-split baseline (DPNoSE).
const (
	Name       trainer.AlgoName = "tailoring"
	DPNoSEName trainer.AlgoName = "dpnose"
)

// Budget tailoring and its baseline run from a trainer.Config
// (trainer.RunConfig, `fairdp train --algo tailoring|dpnose`).
func init() {
	trainer.RegisterPipeline(Name, Run)
	trainer.RegisterPipeline(DPNoSEName, Run)
	trainer.RegisterTunablePipeline(Name) // Tune
	trainer.RegisterTunablePipeline(DPNoSEName)
	trainer.RegisterSection[Config](SectionKey)
}
