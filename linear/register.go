package linear

import "github.com/fairdp/fairdp/trainer"

// The --algo names (trainer.Config.Algo) of this package's pipelines.
const (
	PostprocName trainer.AlgoName = "postproc" // DP post-processing (Jagielski et al. 2019)
	OracleName   trainer.AlgoName = "oracle"   // the DP oracle learner (Jagielski et al. 2019)
	ObjPertName  trainer.AlgoName = "objpert"  // objective perturbation (Chaudhuri et al. 2011)
)

// The post-processing, oracle and objective-perturbation pipelines run
// from a trainer.Config (trainer.RunConfig, `fairdp train --algo
// postproc|oracle|objpert`).
func init() {
	trainer.RegisterPipeline(PostprocName, RunPostproc)
	trainer.RegisterPipeline(OracleName, RunPostproc)
	trainer.RegisterPipeline(ObjPertName, RunObjPert)
	trainer.RegisterTunablePipeline(ObjPertName)  // TuneObjPert
	trainer.RegisterTunablePipeline(PostprocName) // TunePostproc, with a private base
	trainer.RegisterTunablePipeline(OracleName)   // TuneOracle
	trainer.RegisterSection[PostprocConfig](PostprocSectionKey)
	trainer.RegisterSection[ObjPertConfig](ObjPertSectionKey)
	// `fairdp eval` reads their model.json (FairModel).
	trainer.RegisterModelFile(string(PostprocName), readFairModel)
	trainer.RegisterModelFile(string(OracleName), readFairModel)
}
