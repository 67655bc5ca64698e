package trainer_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// TestDataRefusals: every malformed in-memory table is refused by
// NewPrivate before training, naming the field and record at fault.
func TestDataRefusals(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(d *trainer.Data)
	}{
		{"Data.Features", func(d *trainer.Data) { d.Features = nil }},
		{"Data.Features[0]", func(d *trainer.Data) {
			for i := range d.Features {
				d.Features[i] = nil
			}
		}},
		{"Data.Features[7]", func(d *trainer.Data) { d.Features[7] = d.Features[7][:3] }},
		{"Data.Features[5][2]", func(d *trainer.Data) { d.Features[5][2] = math.NaN() }},
		{"Data.Labels", func(d *trainer.Data) { d.Labels = d.Labels[1:] }},
		{"Data.Labels[9]", func(d *trainer.Data) { d.Labels[9] = 2 }}, // two names, so 0 or 1
		{"Data.Groups[4]", func(d *trainer.Data) { d.Groups[4] = -1 }},
		{"Data.Groups", func(d *trainer.Data) { d.Groups = nil }},
		{"Data.LabelNames", func(d *trainer.Data) { d.LabelNames = []string{"only"} }},
		{"Data.FeatureNames", func(d *trainer.Data) { d.FeatureNames = []string{"a"} }},
		{"Data.Test.Features[1]", func(d *trainer.Data) {
			d.Test = syntheticTable(10, 2)
			d.Test.Features[1] = append(d.Test.Features[1], 0)
		}},
		{"Data.Test.Groups[3]", func(d *trainer.Data) {
			d.Test = syntheticTable(10, 2)
			d.Test.Groups[3] = 2
		}},
	} {
		d := syntheticTable(20, 1)
		tc.edit(d)
		_, err := trainer.NewPrivate(trainer.PrivateOptions{Data: d, Epsilon: 1})
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || fe[0].Field != tc.field {
			t.Errorf("%s: %v, want a FieldError on %s", tc.field, err, tc.field)
		}
	}
	for _, o := range []trainer.PrivateOptions{
		{Data: syntheticTable(20, 1), Dataset: "adult", Epsilon: 1},
		{Data: syntheticTable(20, 1), Limit: 10, Epsilon: 1},
	} {
		var fe trainer.FieldErrors
		if _, err := trainer.NewPrivate(o); !errors.As(err, &fe) || fe[0].Field != "Data" {
			t.Errorf("%+v: %v, want a FieldError on Data", o, err)
		}
	}
}

// TestDataSplitKeepsRecords: the split of an in-memory table is a
// partition of its rows, each record keeping its features, label and group
// (checked against the caller's rows through Row, the 1-based row index),
// and the names the caller gave.
func TestDataSplitKeepsRecords(t *testing.T) {
	d := syntheticTable(101, 4)
	d.FeatureNames = []string{"f0", "f1", "f2", "f3"}
	seed := uint64(9)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Data: d, Epsilon: 1, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if p.Train.N() != 75 || p.Test.N() != 26 {
		t.Fatalf("split %d/%d, want 75/26", p.Train.N(), p.Test.N())
	}
	seen := make([]bool, len(d.Features))
	for _, s := range []struct {
		name string
		n    int
		x    []float64
		dim  int
		y, g []int
		row  []int
	}{{"train", p.Train.N(), p.Train.X, p.Train.Dim, p.Train.Labels, p.Train.Groups, p.Train.Row},
		{"test", p.Test.N(), p.Test.X, p.Test.Dim, p.Test.Labels, p.Test.Groups, p.Test.Row}} {
		for i := range s.n {
			r := s.row[i] - 1
			if seen[r] {
				t.Fatalf("%s: row %d twice", s.name, r+1)
			}
			seen[r] = true
			for j, v := range d.Features[r] {
				if s.x[i*s.dim+j] != v {
					t.Fatalf("%s record %d (row %d) feature %d: %v, want %v", s.name, i, r+1, j, s.x[i*s.dim+j], v)
				}
			}
			if s.y[i] != d.Labels[r] || s.g[i] != d.Groups[r] {
				t.Fatalf("%s record %d (row %d): label %d group %d, want %d %d", s.name, i, r+1, s.y[i], s.g[i], d.Labels[r], d.Groups[r])
			}
		}
	}
	if p.Train.FeatureNames[3] != "f3" || p.Test.LabelNames[1] != "yes" || p.Train.GroupNames[0] != "a" {
		t.Errorf("names %v %v %v", p.Train.FeatureNames, p.Test.LabelNames, p.Train.GroupNames)
	}
	if p.Config().Dataset != trainer.MemoryDataset || p.Config().TrainFrac != trainer.DefaultTrainFrac {
		t.Errorf("config dataset %q, train fraction %v", p.Config().Dataset, p.Config().TrainFrac)
	}
}

// TestDataTestSetMetrics: with Data.Test given, the report's test error
// and demographic-parity gap are those of the trained model on exactly
// those records, recomputed here with the model's weights by hand (the
// slow path: a dot product and a threshold per record).
func TestDataTestSetMetrics(t *testing.T) {
	d := syntheticTable(300, 5)
	d.Test = syntheticTable(120, 6)
	seed := uint64(2)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Data: d, Epsilon: 2, Epochs: 3, Batch: 50, Seed: &seed,
		Method: fermi.Method{Lambda: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Train.N() != 300 || p.Test.N() != 120 {
		t.Fatalf("sets %d/%d, want the given 300/120", p.Train.N(), p.Test.N())
	}
	m := newLogistic(4, []float64{0.1, -0.1, 0.1, -0.1}, 0)
	rep, err := trainer.TrainPrivate(context.Background(), p, trainer.Model[float64](m))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Algorithm != "fermi" || rep.Config.Fair.Lambda != 1 || rep.Dataset != trainer.MemoryDataset {
		t.Errorf("report: algorithm %s, λ %v, dataset %s", rep.Algorithm, rep.Config.Fair.Lambda, rep.Dataset)
	}
	wrong := 0
	var pos, cnt [2]float64
	for i, x := range d.Test.Features {
		z := m.b.Value[0]
		for j, v := range x {
			z += v * m.w.Value[j]
		}
		pred := 0
		if z > 0 {
			pred = 1
		}
		if pred != d.Test.Labels[i] {
			wrong++
		}
		g := d.Test.Groups[i]
		cnt[g]++
		pos[g] += float64(pred)
	}
	if want := float64(wrong) / 120; math.Abs(rep.Test.Error-want) > 1e-12 {
		t.Errorf("test error %v, by hand %v", rep.Test.Error, want)
	}
	if want := math.Abs(pos[0]/cnt[0] - pos[1]/cnt[1]); math.Abs(rep.Test.DPViolation-want) > 1e-12 {
		t.Errorf("demographic-parity violation %v, by hand %v", rep.Test.DPViolation, want)
	}
}

// TestPrivateBuildsTheModel: with no model passed, TrainPrivate trains the
// zoo architecture PrivateOptions.Model names, or the network Spec
// describes (in_shape and classes taken from the data), with the parameter
// count the spec states.
func TestPrivateBuildsTheModel(t *testing.T) {
	for _, tc := range []struct {
		opts   trainer.PrivateOptions
		arch   string
		params int
	}{
		{trainer.PrivateOptions{Model: "mlp", Hidden: []int{8}}, "mlp", 4*8 + 8 + 8 + 1},
		{trainer.PrivateOptions{Spec: &models.Spec{Arch: "mine", Layers: []nn.LayerSpec{{Kind: "linear", In: 4, Out: 3},
			{Kind: "tanh"}, {Kind: "linear", In: 3, Out: 1}}}}, "mine", 4*3 + 3 + 3 + 1},
		{trainer.PrivateOptions{}, "logistic", 4 + 1},
	} {
		seed := uint64(8)
		o := tc.opts
		o.Data, o.Epsilon, o.Epochs, o.Seed = syntheticTable(200, 3), 1, 1, &seed
		p, err := trainer.NewPrivate(o)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := trainer.TrainPrivate[float32](context.Background(), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Model != tc.arch || rep.Params != tc.params || rep.DType != "float32" {
			t.Errorf("%s: trained %s with %d parameters (%s), want %d", tc.arch, rep.Model, rep.Params, rep.DType, tc.params)
		}
	}
	_, err := trainer.NewPrivate(trainer.PrivateOptions{Data: syntheticTable(20, 3), Epsilon: 1,
		Spec: &models.Spec{Layers: []nn.LayerSpec{{Kind: "linear", In: 5, Out: 1}}}})
	if err == nil || !strings.Contains(err.Error(), "Spec") {
		t.Errorf("a spec that does not fit the data: %v", err)
	}
}
