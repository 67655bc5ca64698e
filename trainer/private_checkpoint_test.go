package trainer_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// TestPrivateCheckpointResumes: a library run with PrivateOptions.Checkpoint
// stopped after its first epoch and continued by a second NewPrivate (as a
// later process would) ends bit-identical to the same run uninterrupted,
// with the data-aware learning rate and clip chosen the same way both
// times; the checkpointed Private trains once.
func TestPrivateCheckpointResumes(t *testing.T) {
	dir := t.TempDir()
	seed := uint64(5)
	opts := func(out string, ck trainer.CheckpointOptions) trainer.PrivateOptions {
		return trainer.PrivateOptions{Dataset: "adult", Limit: 3000, Epsilon: 1, Epochs: 3, Batch: 128, Seed: &seed,
			Out: out, Checkpoint: ck}
	}
	train := func(o trainer.PrivateOptions, ctx context.Context) (*trainer.Private, error) {
		t.Helper()
		p, err := trainer.NewPrivate(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = trainer.TrainPrivate[float32](ctx, p, nil)
		return p, err
	}
	spe := 0
	restore := trainer.SetStepHook(func(e, s int) error {
		if e == 1 {
			spe = s
		}
		return nil
	})
	straight := filepath.Join(dir, "straight")
	if _, err := train(opts(straight, trainer.CheckpointOptions{}), context.Background()); err != nil {
		t.Fatal(err)
	}
	restore()

	ck := trainer.CheckpointOptions{Dir: filepath.Join(dir, "ck"), Resume: true}
	resumed := filepath.Join(dir, "resumed")
	ctx, cancel := context.WithCancel(context.Background())
	restore = trainer.SetStepHook(func(e, s int) error { return stopAfter(1, spe)(e, s, cancel) })
	_, err := train(opts(resumed, ck), ctx)
	restore()
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the first part ended with %v, want context.Canceled", err)
	}
	p, err := train(opts(resumed, ck), context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, straight, resumed)
	if _, err := trainer.TrainPrivate[float32](context.Background(), p, nil); err == nil {
		t.Error("a checkpointed Private trained a second run")
	}
}
