package linear

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestSyntheticRecoversGroups: each group follows y = a + xᵀβ_k + N(0, σ²)
// (Alabi and Wiggins 2023): per-group OLS recovers a and β_k within 5 standard errors
// (SE ≈ σ/√n) and the residual variance within 5 sd (sd ≈ σ²√(2/n)).
func TestSyntheticRecoversGroups(t *testing.T) {
	groups := []SyntheticGroup{
		{Name: "big", N: 8000, Slope: []float64{-10, 2}, NoiseStd: 1},
		{N: 4000, Slope: []float64{10, 0}, Intercept: 3, NoiseStd: 2},
	}
	d, err := Synthetic(rand.New(rand.NewPCG(31, 32)), "syn", groups)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.N() != 12000 || d.Dim != 2 || d.Labels != nil || len(d.Targets) != 12000 {
		t.Fatalf("shape: N=%d Dim=%d labels=%v targets=%d", d.N(), d.Dim, d.Labels != nil, len(d.Targets))
	}
	if got := strings.Join(d.GroupNames, ","); got != "big,g2" {
		t.Errorf("group names %q, want big,g2", got)
	}
	if c := d.GroupCounts(); c[0] != 8000 || c[1] != 4000 {
		t.Errorf("group counts %v", c)
	}
	for k, g := range groups {
		var rows []int
		for i, s := range d.Groups {
			if s == k {
				rows = append(rows, i)
			}
		}
		x := mat.NewDense(len(rows), 3, nil)
		y := make([]float64, len(rows))
		for r, i := range rows {
			x.Set(r, 0, 1)
			x.Set(r, 1, d.X[2*i])
			x.Set(r, 2, d.X[2*i+1])
			y[r] = d.Targets[i]
		}
		beta, err := OLS(x, y)
		if err != nil {
			t.Fatal(err)
		}
		se := g.NoiseStd / math.Sqrt(float64(g.N))
		closeSlices(t, "group "+d.GroupNames[k]+" coefficients", beta, []float64{g.Intercept, g.Slope[0], g.Slope[1]}, 5*se)
		pred := Predict(x, beta)
		ss := 0.0
		for r := range y {
			ss += (y[r] - pred[r]) * (y[r] - pred[r])
		}
		v := ss / float64(len(y))
		if sd := g.NoiseStd * g.NoiseStd * math.Sqrt(2/float64(g.N)); math.Abs(v-g.NoiseStd*g.NoiseStd) > 5*sd {
			t.Errorf("group %d residual variance %.4g, want %.4g", k, v, g.NoiseStd*g.NoiseStd)
		}
	}
}

func TestSyntheticSeeded(t *testing.T) {
	g := []SyntheticGroup{{N: 3, Slope: []float64{1}, NoiseStd: 1}}
	a, _ := Synthetic(rand.New(rand.NewPCG(1, 1)), "a", g)
	b, _ := Synthetic(rand.New(rand.NewPCG(1, 1)), "b", g)
	closeSlices(t, "same seed targets", a.Targets, b.Targets, 0)
	c, _ := Synthetic(rand.New(rand.NewPCG(2, 1)), "c", g)
	if a.Targets[0] == c.Targets[0] {
		t.Error("different seeds gave the same data")
	}
}

func TestSyntheticErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		groups []SyntheticGroup
		want   string
	}{
		{nil, "no groups"},
		{[]SyntheticGroup{{N: 1}}, "no slope"},
		{[]SyntheticGroup{{N: 1, Slope: []float64{1}}, {N: 1, Slope: []float64{1, 2}}}, "group 2 has 2 slopes"},
		{[]SyntheticGroup{{N: 0, Slope: []float64{1}}}, "N = 0"},
		{[]SyntheticGroup{{N: 1, Slope: []float64{1}, NoiseStd: -1}}, "NoiseStd"},
		{[]SyntheticGroup{{N: 1, Slope: []float64{math.NaN()}}}, "slope 1"},
	} {
		if _, err := Synthetic(r, "x", tc.groups); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.groups, err, tc.want)
		}
	}
	if _, err := Synthetic(nil, "x", []SyntheticGroup{{N: 1, Slope: []float64{1}}}); err == nil {
		t.Error("nil rand accepted")
	}
}
