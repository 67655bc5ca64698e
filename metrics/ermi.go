package metrics

// ERMIDemographicParity is the exponential Rényi mutual information between
// soft predictions and the sensitive group (Lowy et al. 2022), the quantity
// DP-FERMI regularises:
//
//	Σ_j Σ_r p̂(ŷ=j, s=r)² / (p̂(ŷ=j) p̂_S(r)) - 1,  p̂(ŷ=j, s=r) = (1/n) Σ_{i: s_i=r} F_j(x_i).
//
// probs holds n rows of l class probabilities (row-major, n = len(s)), s the
// group of each row in 0..k-1. The result is ≥ 0 and 0 exactly when the
// average soft prediction is the same in every group; it is 0 for n = 0.
// Cells with p̂(ŷ=j, s=r) = 0 add nothing (their limit), which also covers
// empty groups and classes no row gives mass to. Tiny negative values from
// rounding are returned as 0. It panics if len(probs) ≠ len(s)·l or a group
// is out of range.
func ERMIDemographicParity(probs []float64, s []int, l, k int) float64 {
	must(checkProbs(probs, nil, s, l, k, false))
	t := newSoftTable(l, k)
	for i, r := range s {
		t.add(probs[i*l:(i+1)*l], r)
	}
	return t.ermi()
}

// ERMIEqualizedOdds is the conditional ERMI of Lowy et al. 2022, the
// equalized-odds form of DP-FERMI's regulariser:
//
//	Σ_y p̂(y) · [Σ_j Σ_r p̂(j, r | y)² / (p̂(j | y) p̂(r | y)) - 1],
//
// that is ERMIDemographicParity on the records of each label y, weighted by
// the label's frequency. Labels y are in 0..l-1 (the classes of probs).
// It panics if the lengths disagree or a label or group is out of range.
func ERMIEqualizedOdds(probs []float64, y, s []int, l, k int) float64 {
	must(checkProbs(probs, y, s, l, k, true))
	tables := make([]softTable, l)
	for t := range tables {
		tables[t] = newSoftTable(l, k)
	}
	for i, r := range s {
		tables[y[i]].add(probs[i*l:(i+1)*l], r)
	}
	total := 0.0
	for _, t := range tables {
		total += float64(t.n) / float64(len(s)) * t.ermi()
	}
	return total
}

// softTable accumulates the unnormalised joint mass of soft predictions and
// groups: joint[r*l+j] = Σ_{i: s_i=r} F_j(x_i), count[r] = #{i: s_i=r}.
type softTable struct {
	l, k  int
	joint []float64
	count []int
	n     int
}

func newSoftTable(l, k int) softTable {
	return softTable{l: l, k: k, joint: make([]float64, k*l), count: make([]int, k)}
}

func (t *softTable) add(row []float64, r int) {
	for j, p := range row {
		t.joint[r*t.l+j] += p
	}
	t.count[r]++
	t.n++
}

// ermi evaluates the ERMI sum from the table. With J = joint mass, M_j its
// class marginal and N_r the group count, (J/n)² / ((M_j/n)(N_r/n)) =
// J² / (M_j N_r), so no division by n is needed.
func (t *softTable) ermi() float64 {
	if t.n == 0 {
		return 0
	}
	marginal := make([]float64, t.l)
	for r := range t.k {
		for j := range t.l {
			marginal[j] += t.joint[r*t.l+j]
		}
	}
	sum := 0.0
	for r := range t.k {
		for j := range t.l {
			if J := t.joint[r*t.l+j]; J != 0 {
				sum += J * J / (marginal[j] * float64(t.count[r]))
			}
		}
	}
	return max(sum-1, 0)
}
