//go:build !cuda

package graph

import (
	"fmt"
	"io"
	"strings"

	G "gorgonia.org/gorgonia"

	"github.com/fairdp/fairdp/nn"
)

// A program's graph often holds more than the forward pass: its loss, a
// regulariser, the Grad nodes and the update nodes (Gorgonia's
// examples/logisticregression holds all four). Lower lowers only the path
// from the input to the named output; this file says what it did with the
// rest, so nothing the program trains is silently dropped.

// L2Term is a regulariser c·Σθ² on one lowered parameter block, as a
// program writes it: Mul(c, Sum(Square(θ))) (either order, c a constant;
// c = 1 when Sum(Square(θ)) is used alone).
type L2Term struct {
	Node  *G.Node // the learnable node θ
	Coef  float64 // c
	Block int     // θ's index in Lowered.Params
}

// rest looks at the graph outside the lowered path: the learnable nodes the
// model leaves untouched and the L2 terms on the lowered weights, and fills
// l's Untouched, L2, WeightDecay and Notes.
func rest[T nn.Float](w *walker, l *Lowered[T]) {
	block := map[*G.Node]int{}
	for i, p := range l.Params {
		block[p] = i
	}
	for _, n := range w.g.AllNodes() {
		// A learnable node is one the program asked Gorgonia's Grad for
		// (Grad gives it a derivative): an input node the program trains.
		if _, used := block[n]; !used && n != w.input && n.IsVar() && n.Deriv() != nil {
			l.Untouched = append(l.Untouched, n)
		}
		if t, ok := w.l2Term(n, block); ok {
			l.L2 = append(l.L2, t)
		}
	}
	if len(l.Untouched) > 0 {
		var s []string
		for _, n := range l.Untouched {
			s = append(s, n.Name())
		}
		l.Notes = append(l.Notes, fmt.Sprintf("learnable nodes outside the path from %s to the output are left untouched "+
			"(the lowered model does not use them, so training does not change them): %s", w.input.Name(), strings.Join(s, ", ")))
	}
	if len(l.L2) == 0 {
		return
	}
	covered := make([]bool, len(l.Params))
	same, c := true, l.L2[0].Coef
	var terms []string
	for _, t := range l.L2 {
		covered[t.Block] = true
		same = same && t.Coef == c
		terms = append(terms, fmt.Sprintf("%g·Σ%s²", t.Coef, t.Node.Name()))
	}
	var missing []string
	for i, ok := range covered {
		if !ok {
			missing = append(missing, l.Params[i].Name())
		}
	}
	switch {
	case len(l.L2) == len(l.Params) && len(missing) == 0 && same && c > 0:
		// ∂(c·Σθ²)/∂θ = 2c·θ: coupled weight decay 2c on every block,
		// taking the program's data loss to be a mean over the batch,
		// as fairdp's is. It reads only the weights, not the data, so
		// it costs no privacy.
		l.WeightDecay = 2 * c
		l.Notes = append(l.Notes, fmt.Sprintf("the L2 term %s is used as weight decay %g (trainer Config.Fair.WeightDecay; "+
			"it reads no data, so it costs no privacy)", strings.Join(terms, " + "), l.WeightDecay))
	case len(missing) > 0:
		l.Notes = append(l.Notes, fmt.Sprintf("the L2 term %s is dropped: it leaves out %s, and fairdp's weight decay "+
			"applies to every parameter block alike; set Config.Fair.WeightDecay yourself if decaying those too is acceptable",
			strings.Join(terms, " + "), strings.Join(missing, ", ")))
	default:
		l.Notes = append(l.Notes, fmt.Sprintf("the L2 terms %s are dropped: fairdp's weight decay is one positive "+
			"coefficient for every parameter block, once each", strings.Join(terms, " + ")))
	}
}

// l2Term recognises n as Sum(Square(θ)) (or Sum(θ ⊙ θ)) over every axis of a
// lowered block θ, with its constant coefficient if a product with a
// constant scalar uses it.
func (w *walker) l2Term(n *G.Node, block map[*G.Node]int) (L2Term, bool) {
	if opKind(n) != "sumOp" || !n.IsScalar() {
		return L2Term{}, false
	}
	sq := w.kids(n)
	if len(sq) != 1 {
		return L2Term{}, false
	}
	var theta *G.Node
	switch k := w.kids(sq[0]); {
	case opKind(sq[0]) == "elemUnaryOp" && opName(sq[0]) == "square" && len(k) == 1:
		theta = k[0]
	case opKind(sq[0]) == "elemBinOp" && opName(sq[0]) == "⊙" && len(k) == 2 && k[0] == k[1]:
		theta = k[0]
	}
	i, ok := block[theta]
	if !ok {
		return L2Term{}, false
	}
	// The coefficient is the constant a product with n multiplies it by
	// (1 if none). Grad's own nodes are not the program's terms: a
	// gradient node (DerivOf set) and a product with one (the backward
	// pass multiplies n by the cost's gradient) are skipped. Another
	// coefficient (a node, or two constants) is not recognised.
	t := L2Term{Node: theta, Coef: 1, Block: i}
	found := false
	for it := w.g.To(n.ID()); it.Next(); {
		p := it.Node().(*G.Node)
		if len(p.DerivOf()) > 0 || opKind(p) != "elemBinOp" || (opName(p) != "⊙" && opName(p) != "×") {
			continue
		}
		for _, k := range w.kids(p) {
			switch {
			case k == n || len(k.DerivOf()) > 0:
			case opKind(k) != "constantScalar" || len(values(k)) != 1 || found:
				return L2Term{}, false
			default:
				t.Coef, found = values(k)[0], true
			}
		}
	}
	return t, true
}

// writeNotes prints l's notes to log, one line each (LowerOptions.Log).
func writeNotes[T nn.Float](log io.Writer, l *Lowered[T]) {
	if log == nil {
		return
	}
	for _, n := range l.Notes {
		fmt.Fprintf(log, "graph: Lower: %s\n", n)
	}
}
