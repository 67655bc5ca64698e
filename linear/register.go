package linear

import "github.com/fairdp/fairdp/trainer"

// The post-processing, oracle and objective-perturbation pipelines run
// from a trainer.Config (trainer.RunConfig, `fairdp train --algo
// postproc|oracle|objpert`).
func init() {
	trainer.RegisterPipeline("postproc", RunPostproc)
	trainer.RegisterPipeline("oracle", RunPostproc)
	trainer.RegisterPipeline("objpert", RunObjPert)
	trainer.RegisterSection[PostprocConfig](PostprocSectionKey)
	trainer.RegisterSection[ObjPertConfig](ObjPertSectionKey)
}
