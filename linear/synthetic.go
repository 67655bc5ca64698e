package linear

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/fairdp/fairdp/loaders"
)

// SyntheticGroup is one group of the budget-tailoring paper's synthetic
// regression data (Alabi and Wiggins 2023): N records with features x ~ N(0, I_d) and
// targets y = Intercept + xᵀSlope + N(0, NoiseStd²).
type SyntheticGroup struct {
	Name      string    // "" names the group g1, g2, …
	N         int       // records
	Slope     []float64 // β_k, one entry per feature (the same length in every group)
	Intercept float64
	NoiseStd  float64 // σ_e ≥ 0
}

// Synthetic draws one data set from the groups, in group order, as a
// regression Dataset (Targets set, Labels nil) named name. Call it twice
// with independent streams for a training and a test set.
func Synthetic(r *rand.Rand, name string, groups []SyntheticGroup) (*loaders.Dataset, error) {
	if r == nil {
		return nil, errors.New("linear.Synthetic: nil *rand.Rand")
	}
	if len(groups) == 0 {
		return nil, errors.New("linear.Synthetic: no groups")
	}
	d := len(groups[0].Slope)
	if d == 0 {
		return nil, fmt.Errorf("linear.Synthetic: group 1 has no slope, want one coefficient per feature")
	}
	total := 0
	for k, g := range groups {
		switch {
		case len(g.Slope) != d:
			return nil, fmt.Errorf("linear.Synthetic: group %d has %d slopes, group 1 has %d; all groups need the same number of features", k+1, len(g.Slope), d)
		case g.N < 1:
			return nil, fmt.Errorf("linear.Synthetic: group %d has N = %d, want ≥ 1 record", k+1, g.N)
		case !(g.NoiseStd >= 0) || math.IsInf(g.NoiseStd, 1):
			return nil, fmt.Errorf("linear.Synthetic: group %d has NoiseStd = %v, want a finite number ≥ 0", k+1, g.NoiseStd)
		case math.IsNaN(g.Intercept) || math.IsInf(g.Intercept, 0):
			return nil, fmt.Errorf("linear.Synthetic: group %d has Intercept = %v, want a finite number", k+1, g.Intercept)
		}
		for j, b := range g.Slope {
			if math.IsNaN(b) || math.IsInf(b, 0) {
				return nil, fmt.Errorf("linear.Synthetic: group %d slope %d = %v, want a finite number", k+1, j+1, b)
			}
		}
		total += g.N
	}
	ds := &loaders.Dataset{
		Name: name, Dim: d, X: make([]float64, 0, total*d), Targets: make([]float64, 0, total),
		Groups: make([]int, 0, total), GroupNames: make([]string, len(groups)),
	}
	for j := range d {
		ds.FeatureNames = append(ds.FeatureNames, fmt.Sprintf("x%d", j+1))
	}
	desc := make([]string, len(groups))
	for k, g := range groups {
		ds.GroupNames[k] = g.Name
		if g.Name == "" {
			ds.GroupNames[k] = fmt.Sprintf("g%d", k+1)
		}
		for range g.N {
			y := g.Intercept
			for _, b := range g.Slope {
				x := r.NormFloat64()
				ds.X = append(ds.X, x)
				y += b * x
			}
			ds.Targets = append(ds.Targets, y+g.NoiseStd*r.NormFloat64())
			ds.Groups = append(ds.Groups, k)
		}
		desc[k] = fmt.Sprintf("%s: n=%d slope=%v intercept=%g noise sd=%g", ds.GroupNames[k], g.N, g.Slope, g.Intercept, g.NoiseStd)
	}
	ds.Notes = []string{"synthetic: x ~ N(0, I), y = intercept + xᵀslope + N(0, sd²) per group; " + strings.Join(desc, "; ")}
	return ds, nil
}
