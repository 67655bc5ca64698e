package trainer

// The privacy of publishing a whole sweep. A sweep trains many models on
// the same records and publishes every one (sweep.csv, the plots), so each
// run's receipt alone understates what the published sweep reveals: the
// runs compose. This file keeps every run's receipt on disk and states the
// total.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// Methods a SweepTotal can name.
const (
	// SweepTotalRDP: every run's mechanisms RDP-composed (their RDP curves
	// summed order by order), converted at the largest δ of the runs.
	SweepTotalRDP = "rdp"
	// SweepTotalRDPBasic: the runs whose mechanisms allow it RDP-composed,
	// the others added by basic composition.
	SweepTotalRDPBasic = "rdp+basic"
	// SweepTotalPLD: every run's mechanisms PLD-composed together at the
	// largest δ of the runs, where every run was receipted by PLD under
	// one neighbouring relation and discretisation interval.
	SweepTotalPLD = "pld"
	// SweepTotalBasic: basic composition, Σε_i at Σδ_i.
	SweepTotalBasic = "basic"
	// SweepTotalNone: no guarantee (a run is not private, or δ reaches 1).
	SweepTotalNone = "none"
)

// SweepTotal is sweep.json's privacy_total: the guarantee of publishing
// every run of the sweep that has a row in its results file. Epsilon is
// nil (JSON null) when publishing the sweep is not differentially private.
type SweepTotal struct {
	Runs    int      `json:"runs"`
	Epsilon *float64 `json:"epsilon"`
	Delta   float64  `json:"delta"`
	Method  string   `json:"method"`
	// Accountant is the analysis behind Epsilon: "rdp" when the runs'
	// mechanisms were RDP-composed across runs, else the accountants of
	// the receipts whose ε were added (e.g. "pld", "pld+rdp"), after
	// "rdp+" for method rdp+basic. RunAccountants lists every accountant
	// the runs' own receipts used (PLD by default).
	Accountant     string   `json:"accountant,omitempty"`
	RunAccountants []string `json:"run_accountants,omitempty"`
	// Order is the Rényi order attaining Epsilon (methods rdp, rdp+basic).
	Order *float64 `json:"order,omitempty"`
	// RDPRuns is how many runs were RDP-composed (PLD-composed, method
	// pld); the rest were added by basic composition.
	RDPRuns int `json:"rdp_runs"`
	// BasicEpsilon and BasicDelta are the basic composition of every run
	// (Σε_i, Σδ_i), shown beside an RDP total for comparison. BasicEpsilon
	// is nil when a run is not private.
	BasicEpsilon *float64 `json:"basic_epsilon"`
	BasicDelta   float64  `json:"basic_delta"`
	Scope        string   `json:"scope,omitempty"`
	// Seeded is true when some run's noise came from a seed the user gave:
	// such a total is NOT secure (the noise is reproducible).
	Seeded bool `json:"seeded"`
	// RDPValid is false when some run's receipt says its ε is not a proven
	// bound: a shuffled run receipted before shuffled runs were bounded by
	// one Gaussian per epoch (accounting.ShuffledCharges; such a receipt
	// stated the Poisson-rate figure). The total is then not a guarantee.
	RDPValid   bool                    `json:"rdp_valid"`
	Note       string                  `json:"note,omitempty"`
	NotCovered []accounting.NotCovered `json:"not_covered,omitempty"`
}

// String is the one-line total, e.g. "(ε = 3.1, δ = 1e-05)-DP over 8 runs
// [rdp composition, order 9]".
func (t SweepTotal) String() string {
	if t.Epsilon == nil {
		return fmt.Sprintf("none over %d runs (ε = ∞: publishing the sweep is not differentially private)", t.Runs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(ε = %.4g, δ = %.3g)-DP over %d runs [%s composition", *t.Epsilon, t.Delta, t.Runs, t.Method)
	if t.Order != nil {
		fmt.Fprintf(&b, ", order %g", *t.Order)
	}
	if t.Method == SweepTotalRDPBasic {
		fmt.Fprintf(&b, ", %d of %d runs by RDP", t.RDPRuns, t.Runs)
	}
	b.WriteString("]")
	if t.Seeded {
		b.WriteString(" NOT secure (seeded): the noise is reproducible from the seeds")
	}
	if !t.RDPValid {
		b.WriteString(" NOT A GUARANTEE: a run's receipt (written before shuffled runs were bounded) states the Poisson-rate figure for its shuffled batches")
	}
	return b.String()
}

// SweepTotalOptions are the choices a sweep makes about its total.
type SweepTotalOptions struct {
	// BasicOnly, when not empty, says why the runs' mechanisms may not be
	// RDP-composed across runs (e.g. a federated run's receipt is its
	// worst silo's, whose RDP curve need not bound every silo's at every
	// order); the total is then the basic composition.
	BasicOnly string
}

// SweepPrivacy composes the receipts of a sweep's published runs. Each run
// is held under its key, so a run added twice (a resumed sweep) counts
// once. Not safe for concurrent use.
type SweepPrivacy struct {
	opts   SweepTotalOptions
	orders []float64
	keys   []string
	runs   map[string]composedRun
}

type composedRun struct {
	rec   accounting.Receipt
	curve []float64 // RDP at each order; nil: basic composition only
	why   string    // why curve is nil
}

// newSweepPrivacy returns an empty composition.
func newSweepPrivacy(opts SweepTotalOptions) *SweepPrivacy {
	return &SweepPrivacy{opts: opts, orders: accounting.OpacusOrders(), runs: map[string]composedRun{}}
}

// Add counts the published run key with its receipt (replacing an earlier
// receipt of the same key).
func (p *SweepPrivacy) Add(key string, rec accounting.Receipt) {
	if _, ok := p.runs[key]; !ok {
		p.keys = append(p.keys, key)
	}
	r := composedRun{rec: rec}
	if rec.Private() {
		if p.opts.BasicOnly != "" {
			r.why = p.opts.BasicOnly
		} else {
			r.curve, r.why = rdpCurve(rec, p.orders)
		}
	}
	p.runs[key] = r
}

// Len is the number of runs counted.
func (p *SweepPrivacy) Len() int { return len(p.keys) }

// rdpCurve is the RDP curve of a receipt's mechanisms at the orders, or nil
// and the reason when the mechanisms cannot be trusted to be the whole run:
// a kind without an RDP bound, or a curve that converts to less than the ε
// the receipt states (the receipt charged something its mechanisms do not
// show). Pure ε-DP charges use min(ε, αε²/2) (ε-DP is ε²/2-zCDP, Bun and
// Steinke 2016, and no Rényi divergence exceeds the max divergence); a
// merged charge's total ε stands in for its parts, which only overstates.
func rdpCurve(rec accounting.Receipt, orders []float64) ([]float64, string) {
	if len(rec.Mechanisms) == 0 {
		return nil, "the receipt lists no mechanisms"
	}
	curve := make([]float64, len(orders))
	pureEps, allPure := 0.0, true
	for _, m := range rec.Mechanisms {
		switch m.Kind {
		case accounting.KindSubsampledGaussian:
			rdp, err := accounting.ComposedRDP(m.SampleRate, m.NoiseMultiplier, m.Steps, orders)
			if err != nil {
				return nil, err.Error()
			}
			for i := range curve {
				curve[i] += rdp[i]
			}
			allPure = false
		case accounting.KindGaussian, accounting.KindZCDP: // ρ-zCDP: RDP αρ at every order
			for i, a := range orders {
				curve[i] += a * m.Rho
			}
			allPure = false
		case accounting.KindLaplace, accounting.KindPureDP:
			for i, a := range orders {
				curve[i] += math.Min(m.Epsilon, a*accounting.PureToRho(m.Epsilon))
			}
			pureEps += m.Epsilon
		default:
			return nil, fmt.Sprintf("mechanism kind %q has no RDP bound here", m.Kind)
		}
	}
	stated := *rec.Epsilon
	if rec.Delta == 0 {
		// A pure ε-DP receipt: its charges must add up to its ε.
		if !allPure || pureEps < stated*(1-1e-9) {
			return nil, fmt.Sprintf("its mechanisms do not add up to its ε = %.4g at δ = 0", stated)
		}
		return curve, ""
	}
	eps, _, err := accounting.EpsilonFromRDP(orders, curve, rec.Delta)
	if err != nil {
		return nil, err.Error()
	}
	if eps < stated*(1-1e-9) {
		return nil, fmt.Sprintf("its mechanisms give ε = %.4g at its δ, less than the %.4g it states", eps, stated)
	}
	return curve, ""
}

// Total states the guarantee of publishing every run added: the RDP
// composition of the runs whose mechanisms allow it (their curves summed,
// converted at the largest δ among them with Balle et al. 2020's
// conversion) plus the basic composition of the others, when that is
// smaller than the basic composition of all (Σε_i at Σδ_i); otherwise the
// basic composition. The RDP total's δ is never larger than the basic
// one's, so the RDP total is chosen only when it is at least as strong in
// both ε and δ. A run that is not private makes the total ∞.
func (p *SweepPrivacy) Total() SweepTotal {
	t := SweepTotal{Runs: len(p.keys), Method: SweepTotalBasic, RDPValid: true}
	var notPrivate, notRDP, runNotes []string
	notCovered := accounting.Receipt{}
	basicEps, basicDelta := 0.0, 0.0
	rdpSum := make([]float64, len(p.orders))
	rdpDelta, restEps, restDelta := 0.0, 0.0, 0.0
	var allAccts, restAccts []string
	for _, k := range p.keys {
		r := p.runs[k]
		for _, n := range r.rec.NotCovered {
			notCovered.AddNotCovered(n.Item, n.Detail)
		}
		if r.rec.Note != "" && !slices.Contains(runNotes, r.rec.Note) {
			runNotes = append(runNotes, r.rec.Note)
		}
		t.Seeded = t.Seeded || r.rec.Seeded
		if r.rec.RDPValid != nil && !*r.rec.RDPValid {
			t.RDPValid = false
		}
		if r.rec.Scope == accounting.ScopeSensitive || t.Scope == "" {
			t.Scope = r.rec.Scope // the weakest scope of any run
		}
		if !r.rec.Private() {
			notPrivate = append(notPrivate, k)
			continue
		}
		eps, delta := *r.rec.Epsilon, r.rec.Delta
		basicEps += eps
		basicDelta += delta
		allAccts = addAccountant(allAccts, r.rec.Accountant)
		if r.curve == nil {
			restAccts = addAccountant(restAccts, r.rec.Accountant)
			notRDP = append(notRDP, fmt.Sprintf("%s (%s)", k, r.why))
			restEps += eps
			restDelta += delta
			continue
		}
		t.RDPRuns++
		rdpDelta = max(rdpDelta, delta)
		for i, v := range r.curve {
			rdpSum[i] += v
		}
	}
	notCovered.AddNotCovered(accounting.NotCoveredHyperparams, "choosing λ or ε by looking at the sweep's "+
		"results spends privacy that no total counts")
	t.NotCovered = notCovered.NotCovered
	var notes []string
	// The runs' own caveats (a large δ, a shuffled sampling, …) hold for
	// the total too; the first few are repeated here, all are in the
	// receipts.
	for i, n := range runNotes {
		if i == maxRunNotes {
			notes = append(notes, fmt.Sprintf("%d more distinct run notes (see the runs' receipts)", len(runNotes)-i))
			break
		}
		notes = append(notes, "a run's note: "+n)
	}
	if len(notPrivate) > 0 {
		t.Method, t.RDPRuns = SweepTotalNone, 0
		notes = append(notes, fmt.Sprintf("%d of %d runs state no finite ε (not private, or published before receipts "+
			"were kept: %s), so publishing every run is not differentially private", len(notPrivate), t.Runs, listKeys(notPrivate)))
		t.Note = strings.Join(notes, "; ")
		return t
	}
	t.BasicEpsilon, t.BasicDelta = &basicEps, basicDelta
	t.Epsilon, t.Delta = &basicEps, basicDelta
	if t.RDPRuns > 0 && rdpDelta > 0 {
		eps, order, err := accounting.EpsilonFromRDP(p.orders, rdpSum, rdpDelta)
		if total, delta := eps+restEps, rdpDelta+restDelta; err == nil && total < basicEps && delta < 1 {
			t.Epsilon, t.Delta, t.Order, t.Method = &total, delta, &order, SweepTotalRDP
			if len(notRDP) > 0 {
				t.Method = SweepTotalRDPBasic
			}
		}
	}
	if len(notRDP) == 0 && t.RDPRuns > 0 && rdpDelta > 0 {
		if eps, ok := p.pldTotal(rdpDelta); ok && eps < *t.Epsilon && rdpDelta < 1 {
			t.Epsilon, t.Delta, t.Order, t.Method = &eps, rdpDelta, nil, SweepTotalPLD
		}
	}
	if t.Method == SweepTotalBasic {
		t.RDPRuns = 0
	}
	t.RunAccountants = allAccts
	switch t.Method {
	case SweepTotalRDP:
		t.Accountant = accounting.AccountantRDP
	case SweepTotalPLD:
		t.Accountant = accounting.AccountantPLD
	case SweepTotalRDPBasic:
		t.Accountant = accounting.AccountantRDP + "+" + strings.Join(restAccts, "+")
	default:
		t.Accountant = strings.Join(allAccts, "+")
	}
	if (t.Method == SweepTotalRDP || t.Method == SweepTotalRDPBasic) && slices.ContainsFunc(allAccts, func(a string) bool { return a != accounting.AccountantRDP }) {
		notes = append(notes, fmt.Sprintf("the runs' receipts are by %s; the total composes their mechanisms across runs by RDP "+
			"(smaller than the sum of their ε here)", strings.Join(allAccts, "+")))
	}
	if len(notRDP) > 0 && t.Method != SweepTotalBasic {
		notes = append(notes, fmt.Sprintf("added by basic composition: %s", listKeys(notRDP)))
	}
	if p.opts.BasicOnly != "" {
		notes = append(notes, "basic composition only: "+p.opts.BasicOnly)
	}
	if t.Delta >= 1 {
		t.Epsilon, t.Method = nil, SweepTotalNone
		notes = append(notes, fmt.Sprintf("the runs' δ add up to %.3g ≥ 1: no guarantee", t.Delta))
	}
	t.Note = strings.Join(notes, "; ")
	return t
}

// pldTotal is the PLD composition at delta of every run's mechanisms
// (Koskela et al. 2020: the runs' privacy-loss distributions convolved, as
// one run's steps are), when every run's receipt is a PLD receipt under one
// neighbouring relation and discretisation interval and each run's
// mechanisms PLD-compose to at least the ε its receipt states (so they are
// the whole run, as rdpCurve checks for RDP); ok is false otherwise.
func (p *SweepPrivacy) pldTotal(delta float64) (eps float64, ok bool) {
	var opts accounting.PLDOptions
	var all []accounting.Mechanism
	for i, k := range p.keys {
		rec := p.runs[k].rec
		if rec.Accountant != accounting.AccountantPLD || rec.PLDInterval == nil || rec.Epsilon == nil {
			return 0, false
		}
		o := accounting.PLDOptions{Interval: *rec.PLDInterval, Relation: rec.Relation}
		if i == 0 {
			opts = o
		} else if o != opts {
			return 0, false
		}
		own, err := accounting.PLDEpsilon(rec.Mechanisms, rec.Delta, opts)
		if err != nil || own < *rec.Epsilon*(1-1e-9) {
			return 0, false
		}
		all = append(all, rec.Mechanisms...)
	}
	eps, err := accounting.PLDEpsilon(all, delta, opts)
	return eps, err == nil && !math.IsInf(eps, 0) && !math.IsNaN(eps)
}

// maxRunNotes is how many distinct run notes a total repeats.
const maxRunNotes = 3

// listKeys names up to five runs and counts the rest.
func listKeys(keys []string) string {
	if len(keys) <= 5 {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:5], ", "), len(keys)-5)
}

// writeSweepTotal sets privacy_total in dir/sweep.json (written by
// CheckSweepSettings), keeping every other field as stored.
func writeSweepTotal(dir string, t SweepTotal) error {
	path := filepath.Join(dir, "sweep.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sweep total: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("sweep total: %s: %w", path, err)
	}
	if fields["privacy_total"], err = json.Marshal(t); err != nil {
		return err
	}
	return atomicfile.WriteJSON(path, fields)
}

// SweepReceipts is a sweep's receipts.jsonl: every finished run's privacy
// receipt, one JSON line {"key": …, "receipt": …} per run, appended with a
// single write and synced BEFORE the run's row goes into the results file,
// so that a resumed sweep can compose every published run. A key may appear
// twice when a sweep was killed between the two writes and the run was
// redone; the last line wins (its row is the one published).
type SweepReceipts struct {
	path string
	f    *os.File
	recs map[string]accounting.Receipt
}

type receiptLine struct {
	Key     string             `json:"key"`
	Receipt accounting.Receipt `json:"receipt"`
}

// openSweepReceipts opens (or creates) the receipts file at path; a torn
// last line left by a crash is cut off.
func openSweepReceipts(path string) (*SweepReceipts, error) {
	s := &SweepReceipts{path: path, recs: map[string]accounting.Receipt{}}
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sweep receipts: %w", err)
	}
	if raw, err = cutTornLine(path, raw); err != nil {
		return nil, err
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var l receiptLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("sweep receipts %s: line %d: %w", path, i+1, err)
		}
		s.recs[l.Key] = l.Receipt
	}
	if s.f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("sweep receipts: %w", err)
	}
	return s, nil
}

// Receipt is the stored receipt of the run key.
func (s *SweepReceipts) Receipt(key string) (accounting.Receipt, bool) {
	r, ok := s.recs[key]
	return r, ok
}

// Append stores the receipt of run key and syncs it to disk.
func (s *SweepReceipts) Append(key string, rec accounting.Receipt) error {
	line, err := json.Marshal(receiptLine{Key: key, Receipt: rec})
	if err != nil {
		return fmt.Errorf("sweep receipts: run %s: %w", key, err)
	}
	if _, err := s.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sweep receipts %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sweep receipts %s: %w", s.path, err)
	}
	s.recs[key] = rec
	return nil
}

// Close closes the file.
func (s *SweepReceipts) Close() error { return s.f.Close() }

// publishedPrivacy composes the receipts of the runs that have a row in
// log, in file order. A row without a stored receipt (receipts.jsonl lost,
// or a sweep made before receipts were kept) counts as not private, so an
// unknown run never shrinks the total.
func publishedPrivacy(log *SweepLog, recs *SweepReceipts, opts SweepTotalOptions) *SweepPrivacy {
	p := newSweepPrivacy(opts)
	for _, row := range log.Rows() {
		k := log.key(row)
		rec, ok := recs.Receipt(k)
		if !ok {
			rec = accounting.Receipt{Note: "no receipt stored for this row; its guarantee is not known"}
		}
		p.Add(k, rec)
	}
	return p
}

// cutTornLine removes a torn last line (one without its newline, left by an
// interrupted append) from raw and from the file at path.
func cutTornLine(path string, raw []byte) ([]byte, error) {
	cut := bytes.LastIndexByte(raw, '\n') + 1
	if cut == len(raw) {
		return raw, nil
	}
	if err := os.Truncate(path, int64(cut)); err != nil {
		return nil, fmt.Errorf("%s: removing a torn last line: %w", path, err)
	}
	return raw[:cut], nil
}

// addAccountant adds a receipt's accountant to a sorted set of names ("" as
// "unknown": a receipt written before it was recorded).
func addAccountant(set []string, acct string) []string {
	if acct == "" {
		acct = "unknown"
	}
	if i, found := slices.BinarySearch(set, acct); !found {
		set = slices.Insert(set, i, acct)
	}
	return set
}
