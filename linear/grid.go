package linear

import "math"

// GridOptimum is the slow, independent check of the post-processing LP
// (SolveHardtLP) for two groups and the paper's two bins: the smallest
// error over a grid of step 1/steps of the four probabilities p_{ŷa}
// (predict positive in bin ŷ of group a) whose false- and true-positive
// rates differ by at most gamma between the groups, on cells c. Every grid
// point is a classifier, so the LP is never worse; the grid approaches it
// from above as steps grows.
func GridOptimum(c Cells, gamma float64, steps int) float64 {
	type point struct{ fpr, tpr, err float64 }
	var grid [2][]point
	for a := range 2 {
		for i := 0; i <= steps; i++ {
			for j := 0; j <= steps; j++ {
				p0, p1 := float64(i)/float64(steps), float64(j)/float64(steps) // bins 0 and 1
				grid[a] = append(grid[a], point{
					fpr: (p0*c.At(0, a, 0) + p1*c.At(1, a, 0)) / c.GroupLabel(a, 0),
					tpr: (p0*c.At(0, a, 1) + p1*c.At(1, a, 1)) / c.GroupLabel(a, 1),
					err: p0*c.At(0, a, 0) + p1*c.At(1, a, 0) + (1-p0)*c.At(0, a, 1) + (1-p1)*c.At(1, a, 1),
				})
			}
		}
	}
	best := math.Inf(1)
	for _, g0 := range grid[0] {
		for _, g1 := range grid[1] {
			if math.Abs(g0.fpr-g1.fpr) <= gamma && math.Abs(g0.tpr-g1.tpr) <= gamma {
				best = min(best, g0.err+g1.err)
			}
		}
	}
	return best
}
