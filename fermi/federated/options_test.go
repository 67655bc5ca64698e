package federated

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/trainer"
)

// TestSiloOptionsFlow: a silo built from DP-FERMI's options with ε = 3
// and clip 0.5 under a Config whose privacy section is empty (ε 0, clip
// 0: values Validate refuses, so any read of them would fail or change
// the numbers) keeps the budget ε = 3 in its Info and state and releases
// exactly what a silo whose Config states ε = 3 and clip 0.5 releases:
// the same messages and the same receipt.
func TestSiloOptionsFlow(t *testing.T) {
	data := synthetic(300, 9)
	stated := testConfig(21)
	stated.Privacy.Epsilon, stated.Privacy.Clip = 3, 0.5
	o := fermi.OptionsOf(stated)
	bare := stated
	bare.Privacy = trainer.DPConfig{}

	_, run := dpops.NewRand(stated.Seed)
	fromOptions, err := newSilo[float64](bare, o, data, SiloSource(run, 0, 0), SiloOptions{Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	_, run = dpops.NewRand(stated.Seed)
	fromConfig, err := NewSilo[float64](stated, data, SiloSource(run, 0, 0), SiloOptions{Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= 3; r++ {
		a, err := fromOptions.Round(request(fromOptions, r, 0.01))
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		b, err := fromConfig.Round(request(fromConfig, r, 0.01))
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round %d: the silo built from options answers %v, the one from Config %v", r, a, b)
		}
	}
	info := must[Info](t)(fromOptions.Info())
	if info.Epsilon != 3 || fromOptions.State().Budget != 3 || fromOptions.State().Release.Clip != 0.5 || fromOptions.alg.Clip != 0.5 {
		t.Errorf("budget ε %v (state %v), clip %v (DP-FERMI's %v); want the options' 3 and 0.5",
			info.Epsilon, fromOptions.State().Budget, fromOptions.State().Release.Clip, fromOptions.alg.Clip)
	}
	got := must[accounting.Receipt](t)(fromOptions.FullReceipt())
	want := must[accounting.Receipt](t)(fromConfig.FullReceipt())
	if got.Epsilon == nil || want.Epsilon == nil || *got.Epsilon != *want.Epsilon || *got.Epsilon > 3 || !reflect.DeepEqual(got.Mechanisms, want.Mechanisms) {
		t.Errorf("receipt ε %v %v, want the Config-built silo's %v %v (≤ 3)", got.Epsilon, got.Mechanisms, want.Epsilon, want.Mechanisms)
	}
}

// TestSiloOptionsRefuseBadPrivacy: a silo's options constructor refuses an
// ε, δ or clip out of range with an error naming the field, and saves no
// state for it.
func TestSiloOptionsRefuseBadPrivacy(t *testing.T) {
	data := synthetic(300, 9)
	cfg := testConfig(21)
	for _, tc := range []struct {
		field string
		set   func(*fermi.Options)
	}{
		{"Privacy.Epsilon", func(o *fermi.Options) { o.Epsilon = 0 }},
		{"Privacy.Epsilon", func(o *fermi.Options) { o.Epsilon = math.NaN() }},
		{"Privacy.Delta", func(o *fermi.Options) { o.Delta = 1.5 }},
		{"Privacy.Clip", func(o *fermi.Options) { o.Clip = 0 }},
		{"Privacy.Clip", func(o *fermi.Options) { o.Clip = -1 }},
	} {
		o := fermi.OptionsOf(cfg)
		tc.set(&o)
		_, run := dpops.NewRand(cfg.Seed)
		path := t.TempDir() + "/silo.json"
		_, err := newSilo[float64](cfg, o, data, SiloSource(run, 0, 0), SiloOptions{Index: 0, StatePath: path})
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an error naming it", tc.field, err)
		}
		if st, _ := LoadSiloState(path); st != nil {
			t.Errorf("%s: a refused silo saved its state", tc.field)
		}
	}
}
