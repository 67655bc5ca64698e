package trainer

import (
	"context"
	"io"
	"maps"
	"slices"
)

// Pipeline runs one configuration that is not an SGD-family Algorithm
// (post-processing, the oracle learner, budget tailoring): it loads its own
// data, runs, writes its files to cfg.Out when set, and returns the report
// in the one results contract. A run that ends in a documented failure
// (a private LP that found no solution) returns its report and an error.
type Pipeline func(ctx context.Context, cfg Config) (*Report, error)

var pipelines = map[AlgoName]Pipeline{}

// RegisterPipeline makes a pipeline available under Config.Algo name, the
// way Register does for algorithms (packages linear and tailoring call it
// from init). It panics on a name already taken, a programming error.
func RegisterPipeline(name AlgoName, p Pipeline) {
	if _, dup := pipelines[name]; dup {
		panic("trainer: pipeline " + string(name) + " registered twice")
	}
	if _, dup := algorithms[name]; dup {
		panic("trainer: pipeline " + string(name) + " is also an algorithm")
	}
	pipelines[name] = p
}

// pipelineNames lists the registered pipelines.
func pipelineNames() []AlgoName {
	return slices.Sorted(maps.Keys(pipelines))
}

// RunConfig runs whatever cfg.Algo names, an algorithm or a pipeline,
// from the configuration alone: the one entry point behind `fairdp train`,
// and the way to repeat a run from its report (ReadConfig). log gets the
// progress of SGD-family runs.
func RunConfig(ctx context.Context, cfg Config, log io.Writer) (*Report, error) {
	if p, ok := pipelines[cfg.Algo]; ok {
		if cfg.Device != DeviceCPU {
			return nil, deviceRefusal(cfg.Algo)
		}
		return p(ctx, cfg)
	}
	if err := cfg.Algo.Validate(); err != nil {
		return nil, err
	}
	job, err := Prepare(cfg, PrepareOptions{Log: log})
	if err != nil {
		return nil, err
	}
	return Train(ctx, job)
}
