package trainer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestEvaluateCheckpoint: a saved model scored by EvaluateCheckpoint on its
// own held-out split gives exactly the test metrics its training run
// reported (an independent path: the run's own evaluation, before the
// checkpoint was written and read back), and the report it writes carries
// the checkpoint's receipt and says what was scored.
func TestEvaluateCheckpoint(t *testing.T) {
	rep, dir := quick(t, func(c *Config) { c.Algo, c.Limit, c.Epochs = "dpsgd", 3000, 1 })
	res, err := EvaluateCheckpoint(EvalOptions{Checkpoint: filepath.Join(dir, modelFile), Data: Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.HeldOut || !reflect.DeepEqual(res.Test, rep.Test) {
		t.Errorf("held out %v, test %+v; want the run's %+v", res.HeldOut, res.Test, rep.Test)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil || !strings.Contains(text.String(), "test (held-out split") ||
		!strings.Contains(text.String(), "privacy receipt:") {
		t.Errorf("text (%v):\n%s", err, text.String())
	}
	out := filepath.Join(t.TempDir(), "eval.json")
	if err := res.WriteReport(out); err != nil {
		t.Fatal(err)
	}
	var got Report
	raw, _ := os.ReadFile(out)
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Algorithm != "eval" || got.Privacy.Epsilon == nil || *got.Privacy.Epsilon != *rep.Privacy.Epsilon ||
		!strings.Contains(string(raw), `"scored"`) {
		t.Errorf("eval report: %s", raw)
	}
	if _, err := EvaluateCheckpoint(EvalOptions{}); err == nil {
		t.Error("no checkpoint: no error")
	}
	if _, err := EvaluateCheckpoint(EvalOptions{Checkpoint: filepath.Join(dir, "missing.ckpt")}); err == nil {
		t.Error("a missing checkpoint: no error")
	}
}
