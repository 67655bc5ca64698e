package trainer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// flatResult stands for DPSGD-F's result: its fields sit at the top of
// extra.
type flatResult struct {
	Policy string  `json:"policy"`
	Sigma  float64 `json:"sigma"`
}

func (*flatResult) InlineExtra() {}

// TestExtrasRoundTrip: typed results marshal under their keys (an
// InlineExtra's fields at the top of "extra"), and a report read back from
// JSON gives each family its own type through ExtraOf, with keys no
// accessor knows kept as they were.
func TestExtrasRoundTrip(t *testing.T) {
	rep := &Report{}
	rep.SetExtra("eval", &EvalExtra{Checkpoint: "run/model.ckpt", Scored: "all"})
	rep.SetExtra("tune", TuneResult{TuneSearch: TuneSearch{Trials: 3}})
	rep.SetExtra("flat", &flatResult{Policy: "dpsgdf", Sigma: 1.5})
	rep.Extra["future"] = map[string]any{"k": []any{1.0, "x"}}
	raw, err := json.Marshal(rep.Extra)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if string(top["policy"]) != `"dpsgdf"` || string(top["sigma"]) != "1.5" || top["flat"] != nil {
		t.Errorf("inline result not at the top of extra: %s", raw)
	}
	var back Report
	if err := json.Unmarshal([]byte(`{"extra":`+string(raw)+`}`), &back); err != nil {
		t.Fatal(err)
	}
	if e := EvalResultOf(&back); e == nil || *e != *EvalResultOf(rep) {
		t.Errorf("eval read back %+v, want %+v", e, EvalResultOf(rep))
	}
	if r := TuneResultOf(&back); r == nil || r.Trials != 3 {
		t.Errorf("tune read back %+v", r)
	}
	if f, ok := ExtraOf[*flatResult](&back, "flat"); !ok || *f != (flatResult{Policy: "dpsgdf", Sigma: 1.5}) {
		t.Errorf("inline result read back %+v %v", f, ok)
	}
	again, err := json.Marshal(back.Extra)
	if err != nil || string(again) != string(raw) {
		t.Errorf("read and written again:\n%s\nwant\n%s (%v)", again, raw, err)
	}
	if _, ok := ExtraOf[*EvalExtra](&back, "tune"); ok {
		t.Error("ExtraOf decoded tune's result as eval's")
	}
	if EvalResultOf(&Report{}) != nil || TuneResultOf(&Report{}) != nil {
		t.Error("a report without extra has results")
	}
}

// TestExtrasInlineClash: an inline field with the name of a key is an
// error, never a silent overwrite of one result by another.
func TestExtrasInlineClash(t *testing.T) {
	rep := &Report{}
	rep.SetExtra("flat", &flatResult{Policy: "naive"})
	rep.SetExtra("sigma", 2.0)
	if _, err := json.Marshal(rep); err == nil || !strings.Contains(err.Error(), `"sigma"`) {
		t.Errorf("clash: %v", err)
	}
}

// TestEvalReportExtra: extra.eval is an EvalResult naming the checkpoint,
// written under the key and field names report.json always had.
func TestEvalReportExtra(t *testing.T) {
	rep := &Report{Extra: Extras{"eval": &EvalExtra{Checkpoint: "m.ckpt", Scored: "s"}}}
	raw, _ := json.Marshal(rep.Extra)
	var got map[string]map[string]string
	if err := json.Unmarshal(raw, &got); err != nil || !reflect.DeepEqual(got, map[string]map[string]string{"eval": {"checkpoint": "m.ckpt", "scored": "s"}}) {
		t.Errorf("extra %s (%v)", raw, err)
	}
}
