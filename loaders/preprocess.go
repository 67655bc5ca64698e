package loaders

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Preprocessor turns table rows into Dataset records with state fitted on
// the training rows only: z-score means and standard deviations (or min-max
// minima and maxima), category lists, imputation values and the group
// names. Fitting on the test rows
// would leak them into training, so Fit sees the training split and Apply
// encodes any split the same way. The fitted state is JSON (MarshalJSON) so
// a checkpoint can encode new data exactly as its training data was.
type Preprocessor struct {
	schema      Schema
	fitted      bool
	numeric     []numericFit
	categorical []categoricalFit
	groups      []string
	groupIndex  map[string]int
	labels      []string
	features    []string
}

// numericFit is the fitted state of one numeric column. A z-scored column
// is encoded as (v − Mean)/Std, a min-max one (Scale ScaleMinMax) as
// (v − Min)/(Max − Min); a zero scale (constant column) scales by 1.
type numericFit struct {
	Column string  `json:"column"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"` // population std
	Impute float64 `json:"impute"`
	Scale  string  `json:"scale,omitempty"` // "" (z-score) or ScaleMinMax
	Min    float64 `json:"min,omitempty"`   // training minimum (min-max only)
	Max    float64 `json:"max,omitempty"`   // training maximum (min-max only)
}

// offsetScale is what encoding subtracts and then divides by.
func (n numericFit) offsetScale() (offset, scale float64) {
	offset, scale = n.Mean, n.Std
	if n.Scale == ScaleMinMax {
		// max/2 − min/2 cannot overflow where max − min can.
		offset, scale = n.Min, 2*(n.Max/2-n.Min/2)
	}
	if scale == 0 {
		scale = 1
	}
	return offset, scale
}

// categoricalFit is the fitted state of one one-hot column.
type categoricalFit struct {
	Column     string   `json:"column"`
	Categories []string `json:"categories"`
	Impute     string   `json:"impute,omitempty"`
	index      map[string]int
}

// Report counts what Apply did besides encoding: rows dropped for missing
// cells, cells imputed and unseen categories encoded as all-zero.
type Report struct {
	Records        int            // records in the resulting Dataset
	DroppedMissing int            // rows dropped because a used cell was missing
	Imputed        map[string]int // column → cells filled in (impute policies)
	Unseen         map[string]int // column → cells whose category was not fitted (UnseenZero)
}

// Notes renders the report as sentences for Dataset.Notes.
func (r Report) Notes() []string {
	var notes []string
	if r.DroppedMissing > 0 {
		notes = append(notes, fmt.Sprintf("dropped %s with a missing cell", plural(r.DroppedMissing, "row")))
	}
	for _, c := range sortedKeys(r.Imputed) {
		notes = append(notes, fmt.Sprintf("column %q: imputed %s", c, plural(r.Imputed[c], "missing cell")))
	}
	for _, c := range sortedKeys(r.Unseen) {
		notes = append(notes, fmt.Sprintf("column %q: %s with a category not seen when fitting (encoded as all-zero)", c, plural(r.Unseen[c], "cell")))
	}
	return notes
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NewPreprocessor validates the schema and returns an unfitted Preprocessor.
func NewPreprocessor(s Schema) (*Preprocessor, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Preprocessor{schema: s}, nil
}

// Schema returns the schema the preprocessor was built from.
func (p *Preprocessor) Schema() Schema { return p.schema }

// Fitted reports whether Fit (or UnmarshalJSON) has set the state.
func (p *Preprocessor) Fitted() bool { return p.fitted }

// Dim is the number of features Apply produces.
func (p *Preprocessor) Dim() int { return len(p.features) }

// Columns is the number of source columns the features encode (numeric and
// categorical; the label and the sensitive attribute are not features). A
// z-scored column contributes 1 to an encoded row's expected squared norm
// and a one-hot category block exactly 1 (a min-max column at most 1), so
// √Columns is a typical row's norm: public, from the schema, never from
// the rows.
func (p *Preprocessor) Columns() int { return len(p.numeric) + len(p.categorical) }

// FeatureNames returns the feature names ("age", "workclass=Private", …).
func (p *Preprocessor) FeatureNames() []string { return append([]string(nil), p.features...) }

// GroupNames returns the group names in id order.
func (p *Preprocessor) GroupNames() []string { return append([]string(nil), p.groups...) }

// LabelNames returns the label names in id order (nil for regression).
func (p *Preprocessor) LabelNames() []string { return append([]string(nil), p.labels...) }

// Scaling returns the fitted mean and standard deviation of a numeric column.
func (p *Preprocessor) Scaling(column string) (mean, std float64, ok bool) {
	for _, n := range p.numeric {
		if n.Column == column {
			return n.Mean, n.Std, true
		}
	}
	return 0, 0, false
}

// Categories returns the fitted category list of a categorical column.
func (p *Preprocessor) Categories(column string) ([]string, bool) {
	for _, c := range p.categorical {
		if c.Column == column {
			return append([]string(nil), c.Categories...), true
		}
	}
	return nil, false
}

// Fit computes the preprocessing state from the training rows of t.
func (p *Preprocessor) Fit(t *Table) error {
	recs, _, err := p.parse(t)
	if err != nil {
		return err
	}
	return p.fit(t, recs, nil)
}

// Apply encodes the rows of t with the fitted state.
func (p *Preprocessor) Apply(t *Table) (*Dataset, error) {
	d, _, err := p.ApplyReport(t)
	return d, err
}

// ApplyReport is Apply that also returns what was dropped, imputed or
// unseen (the same counts are in the Dataset's Notes).
func (p *Preprocessor) ApplyReport(t *Table) (*Dataset, Report, error) {
	if !p.fitted {
		return nil, Report{}, errors.New("preprocessor is not fitted: call Fit on the training rows first")
	}
	recs, dropped, err := p.parse(t)
	if err != nil {
		return nil, Report{}, err
	}
	d, rep, err := p.encode(t, recs)
	if err != nil {
		return nil, Report{}, err
	}
	rep.DroppedMissing = dropped
	d.Notes = rep.Notes()
	return d, rep, nil
}

// layout is where the schema's columns are in one table.
type layout struct {
	hasLabel             bool
	label, target        int // -1 when absent
	sensitive            []int
	numeric, categorical []int
	numCols, catCols     []string
	filters              []columnFilter
	sensCols             []string
	targetCol            string
	sourceList           string
	labelPos, labelNeg   map[string]bool
	classIndex           map[string]int
}

// resolve finds the schema's columns in t and checks that every column of t
// has a role.
func (p *Preprocessor) resolve(t *Table) (*layout, error) {
	s := p.schema
	lay := &layout{label: -1, target: -1, sourceList: strings.Join(t.Sources, ", ")}
	cols, err := renamedColumns(t.Columns, s.Rename)
	if err != nil {
		return nil, &DataError{File: lay.sourceList, Msg: err.Error()}
	}
	used := make([]bool, len(cols))
	find := func(col, role string) (int, error) {
		var at []int
		for j, c := range cols {
			if c == col {
				at = append(at, j)
			}
		}
		switch {
		case len(at) == 0:
			return -1, &DataError{File: lay.sourceList, Field: col,
				Msg: fmt.Sprintf("the schema's %s column is not in the file; the file's columns are %s", role, quoteList(cols, 40))}
		case len(at) > 1 && role != "dropped":
			return -1, &DataError{File: lay.sourceList, Field: col, Msg: fmt.Sprintf("the header names this column %d times "+
				"(columns #%d and #%d…): give one another name with \"rename\": {\"#%d\": \"NEW NAME\"}", len(at), at[0]+1, at[1]+1, at[1]+1)}
		}
		for _, j := range at {
			used[j] = true
		}
		return at[0], nil
	}
	if s.Label.Column != "" {
		lay.hasLabel = true
		if lay.label, err = find(s.Label.Column, "label"); err != nil {
			return nil, err
		}
	}
	if s.Target != "" {
		lay.targetCol = s.Target
		if lay.target, err = find(s.Target, "target"); err != nil {
			return nil, err
		}
	}
	lay.sensCols = s.Sensitive.Columns
	for _, c := range s.Sensitive.Columns {
		j, err := find(c, "sensitive")
		if err != nil {
			return nil, err
		}
		lay.sensitive = append(lay.sensitive, j)
	}
	lay.numCols, lay.catCols = s.featureColumns()
	for _, c := range lay.numCols {
		j, err := find(c, "numeric")
		if err != nil {
			return nil, err
		}
		lay.numeric = append(lay.numeric, j)
	}
	for _, c := range lay.catCols {
		j, err := find(c, "categorical")
		if err != nil {
			return nil, err
		}
		lay.categorical = append(lay.categorical, j)
	}
	for _, c := range s.Drop {
		if c == "" { // every unnamed column (a header cell left empty, e.g. a pandas index)
			for j := range cols {
				if t.Columns[j] == "column"+strconv.Itoa(j+1) {
					used[j] = true
				}
			}
			continue
		}
		if _, err := find(c, "dropped"); err != nil {
			return nil, err
		}
	}
	for _, c := range sortedKeys(s.Filter) {
		j := slices.Index(cols, c)
		if j < 0 {
			return nil, &DataError{File: lay.sourceList, Field: c,
				Msg: fmt.Sprintf("the schema filters on this column, which is not in the file; the file's columns are %s", quoteList(cols, 40))}
		}
		lay.filters = append(lay.filters, columnFilter{col: j, name: c, keep: canonicalSet(s.Filter[c])})
		if !used[j] && !slices.Contains(s.Drop, c) && !s.DropRest {
			used[j] = true // a column used only to filter rows needs no other role
		}
	}
	for j, c := range cols {
		if !used[j] && !s.DropRest {
			return nil, &DataError{File: lay.sourceList, Field: c,
				Msg: "column is not in the schema; list it under numeric, categorical or drop, or set \"drop_rest\": true to drop every column without a role"}
		}
	}
	lay.labelPos, lay.labelNeg = canonicalSet(s.Label.Positive), canonicalSet(s.Label.Negative)
	lay.classIndex = make(map[string]int, len(s.Label.Classes))
	for i, c := range s.Label.Classes {
		lay.classIndex[canonicalValue(c)] = i
	}
	return lay, nil
}

// renamedColumns applies a schema's rename map ("name" or "#N" → new name).
func renamedColumns(cols []string, rename map[string]string) ([]string, error) {
	if len(rename) == 0 {
		return cols, nil
	}
	out := slices.Clone(cols)
	for _, from := range sortedKeys(rename) {
		to := rename[from]
		if n, err := strconv.Atoi(strings.TrimPrefix(from, "#")); strings.HasPrefix(from, "#") {
			if err != nil || n < 1 || n > len(cols) {
				return nil, fmt.Errorf("rename %q: want #1 … #%d, the file's column positions", from, len(cols))
			}
			out[n-1] = to
			continue
		}
		found := false
		for j, c := range cols {
			if c == from {
				if found {
					return nil, fmt.Errorf("rename %q: the header names %q more than once; rename by position (\"#%d\")", from, from, j+1)
				}
				out[j], found = to, true
			}
		}
		if !found {
			return nil, fmt.Errorf("rename %q: no such column; the file's columns are %s", from, quoteList(cols, 40))
		}
	}
	return out, nil
}

// columnFilter keeps the rows whose value in column col is in keep.
type columnFilter struct {
	col  int
	name string
	keep map[string]bool
}

// canonicalValue is how label, class and filter values are compared: a
// number by its value (so "1", "1.0" and "1e0" are the same), anything
// else as written.
func canonicalValue(v string) string {
	if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return v
}

func canonicalSet(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, v := range list {
		m[canonicalValue(v)] = true
	}
	return m
}

func setOf(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, v := range list {
		m[v] = true
	}
	return m
}

// quoteList renders at most max values as "a", "b", … (n more).
func quoteList(vals []string, max int) string {
	var b strings.Builder
	for i, v := range vals {
		if i == max {
			fmt.Fprintf(&b, ", … (%d more)", len(vals)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(v))
	}
	return b.String()
}

// record is one parsed row, before fitted state is applied.
type record struct {
	row    int       // index in the table
	num    []float64 // NaN marks a missing cell, imputed when encoding
	cat    []string
	catOK  []bool // false marks a missing cell
	label  int
	target float64
	group  string
}

// parse reads every row of t into records, dropping rows per the missing
// policy; it returns the number of dropped rows.
func (p *Preprocessor) parse(t *Table) ([]record, int, error) {
	lay, err := p.resolve(t)
	if err != nil {
		return nil, 0, err
	}
	s := p.schema
	policy := s.onMissing()
	recs := make([]record, 0, t.Len())
	dropped := 0
	t.filtered = 0
rows:
	for i, cells := range t.Cells {
		for _, f := range lay.filters {
			v := cells[f.col]
			if m, ok := s.Recode[f.name]; ok {
				if r, ok := m[v]; ok {
					v = r
				}
			}
			if !f.keep[canonicalValue(v)] {
				t.filtered++
				continue rows
			}
		}
		errAt := func(col, msg string) error {
			return &DataError{File: t.Sources[t.SourceOf[i]], Line: t.Line[i], Field: col, Msg: msg}
		}
		drop := false
		// value returns the recoded cell, or ok=false for a missing cell
		// after applying the policy (which may reject the file).
		value := func(j int, col string, feature bool) (string, bool, error) {
			v := cells[j]
			if s.Format.IsMissing(v) {
				switch {
				case policy == MissingError:
					return "", false, errAt(col, fmt.Sprintf("missing value %q; on_missing is %q (use %q or an impute policy to accept missing cells)", v, MissingError, MissingDropRow))
				case policy == MissingDropRow || !feature:
					drop = true // labels, targets and groups are never imputed
				}
				return "", false, nil
			}
			if m, ok := s.Recode[col]; ok {
				if r, ok := m[v]; ok {
					v = r
				}
			}
			return v, true, nil
		}
		number := func(j int, col string, feature bool) (float64, error) {
			v, ok, err := value(j, col, feature)
			if err != nil || !ok {
				return math.NaN(), err
			}
			x, ok := parseNumber(v)
			if !ok {
				return 0, errAt(col, fmt.Sprintf("expected a finite number, got %q", v))
			}
			return x, nil
		}

		r := record{row: i, num: make([]float64, len(lay.numeric)),
			cat: make([]string, len(lay.categorical)), catOK: make([]bool, len(lay.categorical))}
		if lay.hasLabel {
			if r.label, err = p.parseLabel(lay, value, errAt); err != nil {
				return nil, 0, err
			}
		}
		if lay.target >= 0 {
			if r.target, err = number(lay.target, lay.targetCol, false); err != nil {
				return nil, 0, err
			}
		}
		parts := make([]string, len(lay.sensitive))
		for k, j := range lay.sensitive {
			col := lay.sensCols[k]
			v, ok, err := value(j, col, false)
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				continue
			}
			if m := s.Sensitive.Map[col]; m != nil {
				name, found := m[v]
				if !found {
					return nil, 0, errAt(col, fmt.Sprintf("value %q has no entry in sensitive.map; expected one of %s", v, quoteList(sortedMapKeys(m), 20)))
				}
				v = name
			} else if edges := s.Sensitive.Buckets[col]; edges != nil {
				x, ok := parseNumber(v)
				if !ok {
					return nil, 0, errAt(col, fmt.Sprintf("expected a finite number to bucket, got %q", v))
				}
				v = bucketName(x, edges)
			}
			parts[k] = v
		}
		r.group = "all"
		if len(parts) > 0 {
			r.group = strings.Join(parts, "|")
		}
		for k, j := range lay.numeric {
			if r.num[k], err = number(j, lay.numCols[k], true); err != nil {
				return nil, 0, err
			}
		}
		for k, j := range lay.categorical {
			if r.cat[k], r.catOK[k], err = value(j, lay.catCols[k], true); err != nil {
				return nil, 0, err
			}
		}
		if drop {
			dropped++
			continue
		}
		recs = append(recs, r)
	}
	return recs, dropped, nil
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortValues(keys)
	return keys
}

// parseLabel maps the label cell to a class id (0 for a missing cell that
// drops the row anyway).
func (p *Preprocessor) parseLabel(lay *layout, value func(int, string, bool) (string, bool, error),
	errAt func(col, msg string) error) (int, error) {
	l := p.schema.Label
	v, ok, err := value(lay.label, l.Column, false)
	if err != nil || !ok {
		return 0, err
	}
	switch {
	case l.Threshold != nil:
		x, ok := parseNumber(v)
		if !ok {
			return 0, errAt(l.Column, fmt.Sprintf("expected a finite number to compare with the threshold %s, got %q", formatNumber(*l.Threshold), v))
		}
		if x > *l.Threshold {
			return 1, nil
		}
		return 0, nil
	case len(l.Classes) > 0:
		c, ok := lay.classIndex[canonicalValue(v)]
		if !ok {
			return 0, errAt(l.Column, fmt.Sprintf("label %q is not one of the classes %s", v, quoteList(l.Classes, 20)))
		}
		return c, nil
	default:
		if lay.labelPos[canonicalValue(v)] {
			return 1, nil
		}
		if len(lay.labelNeg) > 0 && !lay.labelNeg[canonicalValue(v)] {
			return 0, errAt(l.Column, fmt.Sprintf("label %q is neither positive (%s) nor negative (%s)", v, quoteList(l.Positive, 10), quoteList(l.Negative, 10)))
		}
		return 0, nil
	}
}

// fit computes the state from training records. extraGroups are group
// names known beyond the training rows (the other split of the same
// files), so that a rare group landing only in the test split still gets
// an id; group names are not statistics of the data, so this leaks nothing
// the model sees.
func (p *Preprocessor) fit(t *Table, recs []record, extraGroups []string) error {
	s := p.schema
	if len(recs) == 0 {
		return &DataError{File: strings.Join(t.Sources, ", "), Msg: "no training records left to fit the preprocessing (after dropping rows with missing cells)"}
	}
	numCols, catCols := s.featureColumns()
	policy := s.onMissing()
	p.numeric = make([]numericFit, len(numCols))
	for k, col := range numCols {
		vals := make([]float64, 0, len(recs))
		for _, r := range recs {
			if !math.IsNaN(r.num[k]) {
				vals = append(vals, r.num[k])
			}
		}
		if len(vals) == 0 {
			return &DataError{File: strings.Join(t.Sources, ", "), Field: col, Msg: "no values in the training rows; expected at least one number"}
		}
		mean, std := meanStd(vals)
		n := numericFit{Column: col, Mean: mean, Std: std, Impute: mean}
		if s.Scale == ScaleMinMax {
			n.Scale, n.Min, n.Max = ScaleMinMax, slices.Min(vals), slices.Max(vals)
		}
		if policy == MissingImputeMode {
			n.Impute = numericMode(vals)
		}
		p.numeric[k] = n
	}
	p.categorical = make([]categoricalFit, len(catCols))
	for k, col := range catCols {
		counts := map[string]int{}
		for _, r := range recs {
			if r.catOK[k] {
				counts[r.cat[k]]++
			}
		}
		c := categoricalFit{Column: col, Categories: s.Categories[col]}
		if c.Categories == nil {
			for v := range counts {
				c.Categories = append(c.Categories, v)
			}
			sortValues(c.Categories)
		}
		c.Categories = append([]string(nil), c.Categories...)
		c.index = indexOf(c.Categories)
		if policy == MissingImputeMean || policy == MissingImputeMode {
			best := -1
			for _, v := range c.Categories { // ties go to the first category
				if counts[v] > best {
					c.Impute, best = v, counts[v]
				}
			}
		}
		if len(c.Categories) == 0 {
			return &DataError{File: strings.Join(t.Sources, ", "), Field: col, Msg: "no values in the training rows; expected at least one category"}
		}
		p.categorical[k] = c
	}

	if declared := s.Sensitive.Groups; len(declared) > 0 {
		p.groups = append([]string(nil), declared...)
		p.groupIndex = indexOf(p.groups)
		for _, r := range recs {
			if _, ok := p.groupIndex[r.group]; !ok {
				return &DataError{File: t.Sources[t.SourceOf[r.row]], Line: t.Line[r.row], Field: strings.Join(s.Sensitive.Columns, "|"),
					Msg: fmt.Sprintf("group %q is not in sensitive.groups %s", r.group, quoteList(declared, 20))}
			}
		}
	} else {
		seen := map[string]bool{}
		for _, r := range recs {
			seen[r.group] = true
		}
		for _, g := range extraGroups {
			seen[g] = true
		}
		p.groups = nil
		for g := range seen {
			p.groups = append(p.groups, g)
		}
		sortValues(p.groups)
		p.groupIndex = indexOf(p.groups)
	}
	p.labels = s.Label.labelNames()
	p.features = featureNames(p.numeric, p.categorical)
	p.fitted = true
	return nil
}

func indexOf(list []string) map[string]int {
	m := make(map[string]int, len(list))
	for i, v := range list {
		m[v] = i
	}
	return m
}

func featureNames(num []numericFit, cat []categoricalFit) []string {
	var names []string
	for _, n := range num {
		names = append(names, n.Column)
	}
	for _, c := range cat {
		for _, v := range c.Categories {
			names = append(names, c.Column+"="+v)
		}
	}
	return names
}

// meanStd is the two-pass mean and population standard deviation (as
// scikit-learn's StandardScaler).
//
// It works on the values divided by the largest magnitude, so values near
// ±1.8e308 (legal float64 cells) cannot overflow the sums, and the results
// are finite for any finite input.
func meanStd(vals []float64) (mean, std float64) {
	var top float64
	for _, v := range vals {
		top = max(top, math.Abs(v))
	}
	if top == 0 {
		return 0, 0
	}
	for _, v := range vals {
		mean += v / top
	}
	mean /= float64(len(vals))
	var ss float64
	for _, v := range vals {
		d := v/top - mean
		ss += d * d
	}
	return mean * top, math.Sqrt(ss/float64(len(vals))) * top
}

// numericMode is the most frequent value (the smallest among ties).
func numericMode(vals []float64) float64 {
	counts := map[float64]int{}
	for _, v := range vals {
		counts[v]++
	}
	best, bestN := math.Inf(1), 0
	for v, n := range counts {
		if n > bestN || (n == bestN && v < best) {
			best, bestN = v, n
		}
	}
	return best
}

// encode turns records into a Dataset with the fitted state.
func (p *Preprocessor) encode(t *Table, recs []record) (*Dataset, Report, error) {
	s := p.schema
	dim := len(p.features)
	if err := checkSize(t, len(recs), dim, p.categorical); err != nil {
		return nil, Report{}, err
	}
	rep := Report{Records: len(recs), Imputed: map[string]int{}, Unseen: map[string]int{}}
	d := &Dataset{
		Name:         s.Name,
		X:            make([]float64, len(recs)*dim),
		Dim:          dim,
		FeatureNames: append([]string(nil), p.features...),
		Groups:       make([]int, len(recs)),
		GroupNames:   append([]string(nil), p.groups...),
		Row:          make([]int, len(recs)),
		SourceOf:     make([]int, len(recs)),
		Sources:      append([]string(nil), t.Sources...),
	}
	if p.labels != nil {
		d.Labels = make([]int, len(recs))
		d.LabelNames = append([]string(nil), p.labels...)
	}
	if s.Target != "" {
		d.Targets = make([]float64, len(recs))
	}
	unseen := s.onUnseen()
	for i, r := range recs {
		errAt := func(col, msg string) error {
			return &DataError{File: t.Sources[t.SourceOf[r.row]], Line: t.Line[r.row], Field: col, Msg: msg}
		}
		x := d.X[i*dim : (i+1)*dim]
		for k, n := range p.numeric {
			v := r.num[k]
			if math.IsNaN(v) {
				v = n.Impute
				rep.Imputed[n.Column]++
			}
			offset, scale := n.offsetScale()
			// v/scale − offset/scale: v − offset itself can overflow for
			// cells near ±1.8e308.
			x[k] = v/scale - offset/scale
			if math.IsInf(x[k], 0) {
				return nil, Report{}, &DataError{File: t.Sources[t.SourceOf[r.row]], Line: t.Line[r.row], Field: n.Column,
					Msg: fmt.Sprintf("value %g is %g standard deviations from the training mean, beyond float64's range", v, x[k])}
			}
		}
		off := len(p.numeric)
		for k, c := range p.categorical {
			v := r.cat[k]
			if !r.catOK[k] {
				v = c.Impute
				rep.Imputed[c.Column]++
			}
			if j, ok := c.index[v]; ok {
				x[off+j] = 1
			} else if unseen == UnseenZero {
				rep.Unseen[c.Column]++
			} else {
				return nil, Report{}, errAt(c.Column, fmt.Sprintf("category %q was not seen when fitting; expected one of %s (or set on_unseen to %q)", v, quoteList(c.Categories, 20), UnseenZero))
			}
			off += len(c.Categories)
		}
		g, ok := p.groupIndex[r.group]
		if !ok {
			return nil, Report{}, errAt(strings.Join(s.Sensitive.Columns, "|"),
				fmt.Sprintf("group %q was not seen when fitting; expected one of %s (declare it under sensitive.groups)", r.group, quoteList(p.groups, 20)))
		}
		d.Groups[i] = g
		if d.Labels != nil {
			d.Labels[i] = r.label
		}
		if d.Targets != nil {
			d.Targets[i] = r.target
		}
		d.Row[i] = t.Line[r.row]
		d.SourceOf[i] = t.SourceOf[r.row]
	}
	return d, rep, nil
}

// maxFeatureValues bounds N·D of an encoded set (2^30 float64 = 8 GiB): an
// identifier column declared categorical would otherwise exhaust memory.
// (A variable so that a test can lower it.)
var maxFeatureValues = 1 << 30

func checkSize(t *Table, n, dim int, cats []categoricalFit) error {
	if n == 0 || dim <= maxFeatureValues/n {
		return nil
	}
	widest := categoricalFit{}
	for _, c := range cats {
		if len(c.Categories) > len(widest.Categories) {
			widest = c
		}
	}
	return &DataError{File: strings.Join(t.Sources, ", "), Field: widest.Column,
		Msg: fmt.Sprintf("%d records × %d features is too large to encode; this column alone has %d categories: is it an identifier that belongs under drop?",
			n, dim, len(widest.Categories))}
}

// preprocessorJSON is the serialised form; version 1.
type preprocessorJSON struct {
	Version     int              `json:"version"`
	Schema      Schema           `json:"schema"`
	Numeric     []numericFit     `json:"numeric"`
	Categorical []categoricalFit `json:"categorical"`
	Groups      []string         `json:"groups"`
	Labels      []string         `json:"labels"`
	Features    []string         `json:"features"`
}

const preprocessorVersion = 1

// MarshalJSON writes the schema and the fitted state.
func (p *Preprocessor) MarshalJSON() ([]byte, error) {
	if !p.fitted {
		return nil, errors.New("preprocessor is not fitted: nothing to serialise")
	}
	return json.Marshal(preprocessorJSON{
		Version: preprocessorVersion, Schema: p.schema, Numeric: p.numeric, Categorical: p.categorical,
		Groups: p.groups, Labels: p.labels, Features: p.features,
	})
}

// UnmarshalJSON restores a fitted Preprocessor and checks that the state is
// consistent with its schema.
func (p *Preprocessor) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j preprocessorJSON
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("preprocessor: %w", err)
	}
	bad := func(format string, a ...any) error { return fmt.Errorf("preprocessor: "+format, a...) }
	if j.Version != preprocessorVersion {
		return bad("version %d, expected %d", j.Version, preprocessorVersion)
	}
	if err := j.Schema.Validate(); err != nil {
		return fmt.Errorf("preprocessor: %w", err)
	}
	numCols, catCols := j.Schema.featureColumns()
	if len(j.Numeric) != len(numCols) || len(j.Categorical) != len(catCols) {
		return bad("%d numeric and %d categorical columns fitted, the schema has %d and %d",
			len(j.Numeric), len(j.Categorical), len(numCols), len(catCols))
	}
	for k, n := range j.Numeric {
		if n.Column != numCols[k] {
			return bad("numeric[%d] is %q, the schema says %q", k, n.Column, numCols[k])
		}
		for _, v := range []float64{n.Mean, n.Std, n.Impute, n.Min, n.Max} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("numeric %q has a non-finite value", n.Column)
			}
		}
		if n.Std < 0 {
			return bad("numeric %q has std %v, expected >= 0", n.Column, n.Std)
		}
		want := ""
		if j.Schema.Scale == ScaleMinMax {
			want = ScaleMinMax
		}
		if n.Scale != want || n.Min > n.Max {
			return bad("numeric %q is scaled %q with min %v, max %v; the schema's scale is %q", n.Column, n.Scale, n.Min, n.Max, j.Schema.Scale)
		}
	}
	for k := range j.Categorical {
		c := &j.Categorical[k]
		if c.Column != catCols[k] {
			return bad("categorical[%d] is %q, the schema says %q", k, c.Column, catCols[k])
		}
		if len(c.Categories) == 0 {
			return bad("categorical %q has no categories", c.Column)
		}
		if err := uniqueStrings(c.Categories); err != nil {
			return bad("categorical %q: %v", c.Column, err)
		}
		c.index = indexOf(c.Categories)
	}
	if len(j.Groups) == 0 {
		return bad("no groups")
	}
	if err := uniqueStrings(j.Groups); err != nil {
		return bad("groups: %v", err)
	}
	if !equalStrings(j.Labels, j.Schema.Label.labelNames()) {
		return bad("labels %q do not match the schema's %q", j.Labels, j.Schema.Label.labelNames())
	}
	if !equalStrings(j.Features, featureNames(j.Numeric, j.Categorical)) {
		return bad("feature names do not match the fitted columns")
	}
	*p = Preprocessor{schema: j.Schema, fitted: true, numeric: j.Numeric, categorical: j.Categorical,
		groups: j.Groups, groupIndex: indexOf(j.Groups), labels: j.Labels, features: j.Features}
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SplitOptions says how records are divided into training and test sets.
type SplitOptions struct {
	// TrainFrac is the training fraction; 0 means the schema's train_frac,
	// or 0.75 (DP-FERMI's split). The training set gets floor(TrainFrac·n)
	// records, as scikit-learn's train_test_split.
	TrainFrac float64
	// Stratify keeps the group×label proportions in both splits.
	Stratify bool
	// Rand drives the split; it must be seeded by the caller.
	Rand *rand.Rand
}

// CSVOptions says which files LoadCSV reads and how it splits them.
type CSVOptions struct {
	Schema Schema
	// Files and TestFiles override the schema's; with TestFiles the files
	// are used as the given train/test split and no random split is made.
	Files, TestFiles []string
	// Dir is the directory relative file names are resolved against.
	Dir string
	// FS, if set, is read instead of the operating system's files (Dir is
	// then ignored); FSName prefixes the names in Dataset.Sources.
	FS     fs.FS
	FSName string
	Split  SplitOptions
	// Fitted, if set, is a preprocessing fitted before (a checkpoint's): it
	// encodes both splits and nothing is fitted on this data. The Schema
	// still says how to read the files and must be CompatibleWith it.
	Fitted *Preprocessor
}

// defaultTrainFrac is DP-FERMI's 75/25 split.
const defaultTrainFrac = 0.75

// LoadCSV reads the files, drops rows per the missing policy, splits them
// (seeded), fits the preprocessing on the training split and applies it to
// both splits.
func LoadCSV(opts CSVOptions) (train, test *Dataset, prep *Preprocessor, err error) {
	s := opts.Schema
	p := opts.Fitted
	if p == nil {
		if p, err = NewPreprocessor(s); err != nil {
			return nil, nil, nil, err
		}
	} else if err := p.CompatibleWith(s); err != nil {
		return nil, nil, nil, err
	}
	fit := func(t *Table, recs []record, extraGroups []string) error {
		if opts.Fitted != nil {
			return nil
		}
		return p.fit(t, recs, extraGroups)
	}
	files, testFiles := opts.Files, opts.TestFiles
	if len(files) == 0 {
		files = s.Files
		if len(testFiles) == 0 {
			testFiles = s.TestFiles
		}
	}
	if len(files) == 0 {
		return nil, nil, nil, errors.New("no data files: set CSVOptions.Files or the schema's files")
	}
	trainTab, err := opts.readTables(files)
	if err != nil {
		return nil, nil, nil, err
	}
	name := s.Name
	if name == "" {
		name = "csv"
	}
	if len(testFiles) > 0 {
		testTab, err := opts.readTables(testFiles)
		if err != nil {
			return nil, nil, nil, err
		}
		trainRecs, trainDropped, err := p.parse(trainTab)
		if err != nil {
			return nil, nil, nil, err
		}
		testRecs, testDropped, err := p.parse(testTab)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := fit(trainTab, trainRecs, recordGroups(testRecs)); err != nil {
			return nil, nil, nil, err
		}
		if train, err = p.encodeSplit(trainTab, trainRecs, trainDropped, false, name+"/train", "train split: the given training files"); err != nil {
			return nil, nil, nil, err
		}
		if test, err = p.encodeSplit(testTab, testRecs, testDropped, false, name+"/test", "test split: the given test files"); err != nil {
			return nil, nil, nil, err
		}
		return train, test, p, nil
	}

	frac := opts.Split.TrainFrac
	if frac == 0 {
		frac = s.TrainFrac
	}
	if frac == 0 {
		frac = defaultTrainFrac
	}
	if !(frac > 0 && frac < 1) {
		return nil, nil, nil, fmt.Errorf("train fraction %v, expected a value in (0, 1)", frac)
	}
	if opts.Split.Rand == nil {
		return nil, nil, nil, errors.New("CSVOptions.Split.Rand is nil: a random split needs a seeded *rand.Rand")
	}
	recs, dropped, err := p.parse(trainTab)
	if err != nil {
		return nil, nil, nil, err
	}
	var strata []int
	if opts.Split.Stratify {
		strata = recordStrata(recs)
	}
	trainIdx, testIdx := splitIndices(len(recs), frac, strata, opts.Split.Rand)
	if err := fit(trainTab, pick(recs, trainIdx), recordGroups(recs)); err != nil {
		return nil, nil, nil, err
	}
	how := fmt.Sprintf("of %d records (train fraction %v, stratified: %v)", len(recs), frac, opts.Split.Stratify)
	if train, err = p.encodeSplit(trainTab, pick(recs, trainIdx), dropped, true, name+"/train",
		fmt.Sprintf("train split: %d %s", len(trainIdx), how)); err != nil {
		return nil, nil, nil, err
	}
	if test, err = p.encodeSplit(trainTab, pick(recs, testIdx), dropped, true, name+"/test",
		fmt.Sprintf("test split: %d %s", len(testIdx), how)); err != nil {
		return nil, nil, nil, err
	}
	return train, test, p, nil
}

// encodeSplit encodes records and notes how they were chosen; dropped rows
// were dropped from t before a random split when beforeSplit is set.
func (p *Preprocessor) encodeSplit(t *Table, recs []record, dropped int, beforeSplit bool, name, how string) (*Dataset, error) {
	d, rep, err := p.encode(t, recs)
	if err != nil {
		return nil, err
	}
	rep.DroppedMissing = dropped
	d.Name = name
	notes := rep.Notes()
	if dropped > 0 {
		notes[0] += " from " + strings.Join(t.Sources, ", ")
		if beforeSplit {
			notes[0] += " before splitting"
		}
	}
	if t.filtered > 0 {
		notes = append(notes, fmt.Sprintf("the schema's filter dropped %s of %s", plural(t.filtered, "row"), strings.Join(t.Sources, ", ")))
	}
	// Rows dropped or filtered from t count every record t holds; cells
	// imputed count this set's own.
	d.NotesCountRecords = dropped > 0 || t.filtered > 0 || len(rep.Imputed) > 0
	if n := p.schema.Label.oneVsRestNote(); n != "" {
		notes = append(notes, n)
	}
	d.Notes = append([]string{how}, notes...)
	return d, nil
}

func recordGroups(recs []record) []string {
	groups := make([]string, len(recs))
	for i, r := range recs {
		groups[i] = r.group
	}
	return groups
}

func pick(recs []record, idx []int) []record {
	out := make([]record, len(idx))
	for i, k := range idx {
		out[i] = recs[k]
	}
	return out
}

// recordStrata numbers the label×group combinations in order of appearance.
func recordStrata(recs []record) []int {
	ids := map[string]int{}
	strata := make([]int, len(recs))
	for i, r := range recs {
		key := strconv.Itoa(r.label) + "\x00" + r.group
		id, ok := ids[key]
		if !ok {
			id = len(ids)
			ids[key] = id
		}
		strata[i] = id
	}
	return strata
}

// readTables reads and joins files, resolving names against Dir or FS.
func (o CSVOptions) readTables(files []string) (*Table, error) {
	var all *Table
	for _, f := range files {
		var t *Table
		var err error
		if o.FS != nil {
			rc, openErr := openData(o.FS, f)
			if openErr != nil {
				return nil, openErr
			}
			label := f
			if o.FSName != "" {
				label = o.FSName + ":" + f
			}
			t, err = ReadCSVFrom(rc, label, o.Schema.Format)
			rc.Close()
		} else {
			path := f
			if o.Dir != "" && !filepath.IsAbs(f) {
				path = filepath.Join(o.Dir, f)
			}
			t, err = ReadCSV(path, o.Schema.Format)
		}
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = t
		} else if err := all.Append(t); err != nil {
			return nil, err
		}
	}
	return all, nil
}
