//go:build !cuda

package graph

import (
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestLowerReportsTheRestOfTheGraph: a program's graph with a loss, L2
// terms, a learnable side branch and Grad lowers the path from the input
// to the output; Lowered says which learnable nodes it left untouched, and
// turns L2 terms into weight decay only where fairdp's one coefficient on
// every block is the same objective. The weight decay is checked against
// Gorgonia's own Grad of the L2 terms: λ·θ = ∂(Σ c·Σθ²)/∂θ.
func TestLowerReportsTheRestOfTheGraph(t *testing.T) {
	l2 := func(u *userNet, p *G.Node, c float64) *G.Node {
		sq := u.must(G.Sum(u.must(G.Square(p))))
		if c == 1 {
			return sq
		}
		return u.must(G.Mul(G.NewConstant(c), sq))
	}
	for _, tc := range []struct {
		name      string
		coefs     [2]float64 // the L2 coefficient on each weight; 0: none
		side      bool       // a learnable side branch the output does not use
		decay     float64
		untouched string
		notes     []string
	}{
		{"L2 on every weight", [2]float64{0.05, 0.05}, false, 0.1, "", []string{"0.05·Σh_w² + 0.05·Σo_w² is used as weight decay 0.1"}},
		{"L2 without a coefficient", [2]float64{1, 1}, false, 2, "", []string{"used as weight decay 2"}},
		{"L2 on one weight", [2]float64{0.05, 0}, false, 0, "", []string{"0.05·Σh_w² is dropped: it leaves out o_w"}},
		{"two coefficients", [2]float64{0.05, 0.01}, false, 0, "", []string{"are dropped: fairdp's weight decay is one positive coefficient"}},
		{"side branch", [2]float64{0, 0}, true, 0, "aux", []string{"left untouched (the lowered model does not use them, so training does not change them): aux"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUserNet(t, 21, 3, 4).denseNoBias("h", 5).apply(G.Tanh)
			hidden := u.cur
			u.denseNoBias("o", 2).apply(softmax)
			out := u.cur
			var hw, ow *G.Node
			for _, n := range u.g.AllNodes() {
				switch n.Name() {
				case "h_w":
					hw = n
				case "o_w":
					ow = n
				}
			}
			cost := u.must(G.Mean(out))
			learnables := G.Nodes{hw, ow}
			for i, c := range tc.coefs {
				if c != 0 {
					cost = u.must(G.Add(cost, l2(u, learnables[i], c)))
				}
			}
			if tc.side {
				aux := u.param("aux", 5, 1)
				cost = u.must(G.Add(cost, u.must(G.Sum(u.must(G.Mul(hidden, aux))))))
				learnables = append(learnables, aux)
			}
			if _, err := G.Grad(cost, learnables...); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			l, err := Lower[float64](u.g, u.x, out, LowerOptions{Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			var untouched []string
			for _, n := range l.Untouched {
				untouched = append(untouched, n.Name())
			}
			if got := strings.Join(untouched, ", "); got != tc.untouched || l.WeightDecay != tc.decay {
				t.Errorf("untouched %q, weight decay %g; want %q, %g", got, l.WeightDecay, tc.untouched, tc.decay)
			}
			if len(l.Notes) != len(tc.notes) || strings.Count(log.String(), "\n") != len(tc.notes) {
				t.Fatalf("notes %q, log %q; want %d", l.Notes, log.String(), len(tc.notes))
			}
			for i, want := range tc.notes {
				if !strings.Contains(l.Notes[i], want) {
					t.Errorf("note %q does not say %q", l.Notes[i], want)
				}
			}
			if l.WeightDecay == 0 {
				return
			}
			// Gorgonia's gradient of the L2 terms alone is λ·θ, block by block.
			g2 := G.NewGraph()
			var ps G.Nodes
			var sum *G.Node
			for i, p := range l.Params {
				q := G.NewTensor(g2, p.Dtype(), p.Dims(), G.WithShape(p.Shape()...), G.WithValue(p.Value()), G.WithName(p.Name()))
				ps = append(ps, q)
				sq := u.must(G.Mul(G.NewConstant(tc.coefs[i]), u.must(G.Sum(u.must(G.Square(q))))))
				if sum == nil {
					sum = sq
				} else {
					sum = u.must(G.Add(sum, sq))
				}
			}
			grads, err := G.Grad(sum, ps...)
			if err != nil {
				t.Fatal(err)
			}
			vm := G.NewTapeMachine(g2)
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			for i, p := range l.Model.Params() {
				want := values(grads[i])
				got := make([]float64, len(p.Value))
				for j, v := range p.Value {
					got[j] = l.WeightDecay * v
				}
				if d := maxRelDiff(got, want); d > 1e-15 {
					t.Errorf("block %d: weight decay %g·θ differs from Gorgonia's gradient of the L2 terms by rel %.3g", i, l.WeightDecay, d)
				}
			}
		})
	}
}
