package linear

import "github.com/fairdp/fairdp/trainer"

// The post-processing, oracle and objective-perturbation pipelines run
// from a trainer.Config (trainer.RunConfig, `fairdp train --algo
// postproc|oracle|objpert`).
func init() {
	trainer.RegisterPipeline("postproc", RunPostproc)
	trainer.RegisterPipeline("oracle", RunPostproc)
	trainer.RegisterPipeline("objpert", RunObjPert)
	// Reports written before report.json's keys were snake_case carry the
	// Go field name the settings had in trainer.Config then.
	trainer.RegisterSection[PostprocConfig](PostprocSectionKey, "Jagielski")
	trainer.RegisterSection[ObjPertConfig](ObjPertSectionKey)
}
