package trainer_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/fairdp/fairdp/trainer"
)

// A resumable run: the same call starts the run and, after a crash or in
// a later process, continues it from its last completed epoch (here the
// second call finds the run finished and only rebuilds its report).
func ExamplePrepare_checkpoint() {
	dir, err := os.MkdirTemp("", "fairdp-checkpoint")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	seed := uint64(1)
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Privacy.Epsilon, cfg.Epochs, cfg.Seed, cfg.Quiet, cfg.Limit = "dpsgd", 1, 2, &seed, true, 2000
	for range 2 {
		job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard, Checkpoint: trainer.CheckpointOptions{Dir: dir, Resume: true}})
		if err != nil {
			fmt.Println(err)
			return
		}
		done, resuming := job.Resuming()
		rep, err := trainer.Train(context.Background(), job)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("resuming %v after %d epochs: ε = %.4f\n", resuming, done, *rep.Privacy.Epsilon)
	}
	// Output:
	// resuming false after 0 epochs: ε = 1.0000
	// resuming true after 2 epochs: ε = 1.0000
}
