package loaders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Policies for missing cells (Schema.OnMissing).
const (
	// MissingDropRow drops a record with a missing cell in any used column.
	MissingDropRow = "drop-row"
	// MissingError rejects the file at the first missing cell.
	MissingError = "error"
	// MissingImputeMean fills numeric cells with the training mean and
	// categorical cells with the training mode.
	MissingImputeMean = "impute-mean"
	// MissingImputeMode fills every feature cell with the training mode.
	MissingImputeMode = "impute-mode"
)

// Scalings of the numeric columns (Schema.Scale).
const (
	// ScaleZScore subtracts the training mean and divides by the training
	// standard deviation (the default).
	ScaleZScore = "zscore"
	// ScaleMinMax maps the training minimum to 0 and the training maximum
	// to 1 (test values may fall outside [0, 1]); DPSGD-F's paper
	// normalises its numerical attributes this way.
	ScaleMinMax = "minmax"
)

// Policies for categories not seen when fitting (Schema.OnUnseen).
const (
	// UnseenError rejects a record whose category is not in the fitted list.
	UnseenError = "error"
	// UnseenZero encodes it as an all-zero one-hot block and counts it.
	UnseenZero = "zero"
)

// Schema says how the columns of a delimited file become a Dataset. It is
// written as JSON (see LoadSchema); every key is optional except label (or
// target) and the lists that account for each column of the file: every
// column must be the label, the target, sensitive, numeric, categorical or
// dropped, so that a renamed or added column is an error, not a silently
// ignored feature.
type Schema struct {
	Name string `json:"name,omitempty"`
	// Files and TestFiles are the data files (relative to the data
	// directory). Without TestFiles, the rows of Files are split at random
	// with TrainFrac (default 0.75) going to training.
	Files     []string  `json:"files,omitempty"`
	TestFiles []string  `json:"test_files,omitempty"`
	TrainFrac float64   `json:"train_frac,omitempty"`
	Format    CSVFormat `json:"format"`

	Label LabelSpec `json:"label"`
	// Target is an optional numeric column copied to Dataset.Targets
	// for regression; it may be the label column too.
	Target    string        `json:"target,omitempty"`
	Sensitive SensitiveSpec `json:"sensitive"`
	// SensitiveAsFeature also feeds the sensitive columns to the model (as
	// categorical columns unless listed under numeric or categorical).
	SensitiveAsFeature bool `json:"sensitive_as_feature,omitempty"`

	// Numeric columns are scaled with statistics of the training rows
	// (Scale); Categorical ones are one-hot encoded.
	Numeric []string `json:"numeric,omitempty"`
	// Scale is how numeric columns are scaled: ScaleZScore (default) or
	// ScaleMinMax.
	Scale       string   `json:"scale,omitempty"`
	Categorical []string `json:"categorical,omitempty"`
	// Categories declares the category list (and one-hot order) of a
	// categorical column; undeclared columns take the values seen in the
	// training rows.
	Categories map[string][]string `json:"categories,omitempty"`
	// Recode maps raw values to other values before anything else (e.g.
	// credit's undocumented EDUCATION 0, 5, 6 to 4 "others").
	Recode map[string]map[string]string `json:"recode,omitempty"`
	Drop   []string                     `json:"drop,omitempty"`
	// DropRest drops every column the schema gives no role, instead of
	// rejecting the file (the default, so that a renamed or added column is
	// noticed). For wide files from the wild.
	DropRest bool `json:"drop_rest,omitempty"`
	// Rename gives file columns new names before anything else: the key is
	// a column name or "#N", the N-th column (1-based), which is how one of
	// two columns with the same header name is told apart.
	Rename map[string]string `json:"rename,omitempty"`
	// Filter keeps only the rows whose value in each named column is one of
	// the listed values (after recode; numbers compare by value, so "1"
	// matches "1.0"); the other rows are dropped before the split and
	// counted in the notes.
	Filter map[string][]string `json:"filter,omitempty"`

	OnMissing string `json:"on_missing,omitempty"` // MissingDropRow (default), MissingError, MissingImputeMean, MissingImputeMode
	OnUnseen  string `json:"on_unseen,omitempty"`  // UnseenError (default) or UnseenZero
}

// LabelSpec says how a column becomes the class label. Exactly one of
// Positive (binary), Classes (multi-class) or Threshold (binary: value >
// threshold) is set.
type LabelSpec struct {
	Column string `json:"column,omitempty"`
	// Positive values give label 1. If Negative is given, only those give
	// label 0 and any other value is an error; otherwise every other value
	// gives 0.
	Positive []string `json:"positive,omitempty"`
	Negative []string `json:"negative,omitempty"`
	// Classes lists the class values; label i is Classes[i].
	Classes []string `json:"classes,omitempty"`
	// Threshold makes the label 1 when the numeric value is > Threshold.
	Threshold *float64 `json:"threshold,omitempty"`
	// Names overrides the label names (2 for binary, len(Classes) else).
	Names []string `json:"names,omitempty"`
}

// SensitiveSpec says how the sensitive columns become one group id.
// Several columns combine into one group named "A|B" (e.g. "Male|White").
type SensitiveSpec struct {
	Columns []string `json:"columns,omitempty"`
	// Map renames a column's raw values to group names (e.g. "1" → "Male");
	// a value missing from a column's map is an error.
	Map map[string]map[string]string `json:"map,omitempty"`
	// Buckets cuts a numeric column at increasing edges into right-closed
	// buckets named "<=e0", "(e0,e1]", …, ">ek".
	Buckets map[string][]float64 `json:"buckets,omitempty"`
	// Groups declares the group names and their ids (in order); without it
	// the ids follow the sorted names.
	Groups []string `json:"groups,omitempty"`
}

// LoadSchema reads a JSON schema file.
func LoadSchema(path string) (Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Schema{}, err
	}
	s, err := ParseSchema(data)
	if err != nil {
		return Schema{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSchema decodes and validates a JSON schema. Unknown keys are errors
// (a misspelt "catgorical" must not silently drop columns).
func ParseSchema(data []byte) (Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		return Schema{}, fmt.Errorf("schema: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Schema{}, fmt.Errorf("schema: unexpected data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return Schema{}, err
	}
	return s, nil
}

// Validate checks a schema on its own, before any file is read.
func (s Schema) Validate() error {
	if err := s.Format.Validate(); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	bad := func(format string, a ...any) error { return fmt.Errorf("schema: "+format, a...) }
	if len(s.TestFiles) > 0 && len(s.Files) == 0 {
		return bad("test_files given without files")
	}
	for _, f := range append(append([]string(nil), s.Files...), s.TestFiles...) {
		if strings.TrimSpace(f) == "" {
			return bad("files and test_files must not contain empty names")
		}
	}
	if math.IsNaN(s.TrainFrac) || s.TrainFrac < 0 || s.TrainFrac >= 1 {
		return bad("train_frac is %v, expected a fraction in (0, 1)", s.TrainFrac)
	}
	switch s.OnMissing {
	case "", MissingDropRow, MissingError, MissingImputeMean, MissingImputeMode:
	default:
		return bad("on_missing is %q, expected %q, %q, %q or %q", s.OnMissing, MissingDropRow, MissingError, MissingImputeMean, MissingImputeMode)
	}
	switch s.Scale {
	case "", ScaleZScore, ScaleMinMax:
	default:
		return bad("scale is %q, expected %q or %q", s.Scale, ScaleZScore, ScaleMinMax)
	}
	switch s.OnUnseen {
	case "", UnseenError, UnseenZero:
	default:
		return bad("on_unseen is %q, expected %q or %q", s.OnUnseen, UnseenError, UnseenZero)
	}
	if err := s.Label.validate(s.Target); err != nil {
		return err
	}
	if err := s.Sensitive.validate(); err != nil {
		return err
	}

	// Every column has exactly one role (the target may also be the label).
	role := map[string]string{}
	assign := func(col, r string) error {
		if strings.TrimSpace(col) == "" {
			if r == "drop" && col == "" {
				return nil // "" drops every unnamed column
			}
			return bad("%s has an empty column name", r)
		}
		if prev, ok := role[col]; ok {
			return bad("column %q is both %s and %s", col, prev, r)
		}
		role[col] = r
		return nil
	}
	if s.Label.Column != "" {
		if err := assign(s.Label.Column, "label"); err != nil {
			return err
		}
	}
	if s.Target != "" && s.Target != s.Label.Column {
		if err := assign(s.Target, "target"); err != nil {
			return err
		}
	}
	for _, c := range s.Sensitive.Columns {
		if err := assign(c, "sensitive"); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		name string
		cols []string
	}{{"numeric", s.Numeric}, {"categorical", s.Categorical}, {"drop", s.Drop}} {
		for _, c := range list.cols {
			if role[c] == "sensitive" && list.name != "drop" {
				if !s.SensitiveAsFeature {
					return bad("column %q is sensitive and %s; set sensitive_as_feature to use it as a feature too", c, list.name)
				}
				role[c] = "sensitive+" + list.name
				continue
			}
			if err := assign(c, list.name); err != nil {
				return err
			}
		}
	}
	for c, cats := range s.Categories {
		if r := role[c]; r != "categorical" && r != "sensitive+categorical" && !(r == "sensitive" && s.SensitiveAsFeature) {
			return bad("categories[%q] is given but %q is not a categorical column", c, c)
		}
		if len(cats) == 0 {
			return bad("categories[%q] is empty, expected at least one category", c)
		}
		if err := uniqueStrings(cats); err != nil {
			return bad("categories[%q]: %v", c, err)
		}
	}
	for c := range s.Recode {
		if r := role[c]; (r == "" && s.Filter[c] == nil) || r == "drop" {
			return bad("recode[%q] is given but %q is not a used column", c, c)
		}
	}
	for from, to := range s.Rename {
		if strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" {
			return bad("rename %q → %q: both names must be non-empty", from, to)
		}
	}
	for c, keep := range s.Filter {
		if strings.TrimSpace(c) == "" || len(keep) == 0 {
			return bad("filter[%q] must name a column and list at least one value to keep", c)
		}
	}
	return nil
}

func (l LabelSpec) validate(target string) error {
	bad := func(format string, a ...any) error { return fmt.Errorf("schema: label: "+format, a...) }
	kinds := 0
	if len(l.Positive) > 0 {
		kinds++
	}
	if len(l.Classes) > 0 {
		kinds++
	}
	if l.Threshold != nil {
		kinds++
	}
	if l.Column == "" {
		if target == "" {
			return bad("no label column and no target: expected label.column (classification) or target (regression)")
		}
		if kinds > 0 || len(l.Negative) > 0 || len(l.Names) > 0 {
			return bad("positive, negative, classes, threshold or names given without label.column")
		}
		return nil
	}
	if kinds != 1 {
		return bad("expected exactly one of positive (binary), classes (multi-class) or threshold for column %q, got %d", l.Column, kinds)
	}
	if len(l.Negative) > 0 && len(l.Positive) == 0 {
		return bad("negative is only allowed with positive")
	}
	if err := uniqueStrings(append(append([]string(nil), l.Positive...), l.Negative...)); err != nil {
		return bad("positive/negative: %v", err)
	}
	if l.Threshold != nil && (math.IsNaN(*l.Threshold) || math.IsInf(*l.Threshold, 0)) {
		return bad("threshold must be a finite number")
	}
	if len(l.Classes) > 0 {
		if len(l.Classes) < 2 {
			return bad("classes lists %d value(s), expected at least 2", len(l.Classes))
		}
		if err := uniqueStrings(l.Classes); err != nil {
			return bad("classes: %v", err)
		}
	}
	if len(l.Names) > 0 {
		want := 2
		if len(l.Classes) > 0 {
			want = len(l.Classes)
		}
		if len(l.Names) != want {
			return bad("names lists %d names, expected %d", len(l.Names), want)
		}
		if err := uniqueStrings(l.Names); err != nil {
			return bad("names: %v", err)
		}
	}
	return nil
}

func (s SensitiveSpec) validate() error {
	bad := func(format string, a ...any) error { return fmt.Errorf("schema: sensitive: "+format, a...) }
	if err := uniqueStrings(s.Columns); err != nil {
		return bad("columns: %v", err)
	}
	isCol := map[string]bool{}
	for _, c := range s.Columns {
		isCol[c] = true
	}
	for c, m := range s.Map {
		if !isCol[c] {
			return bad("map[%q] is given but %q is not in sensitive.columns", c, c)
		}
		if len(m) == 0 {
			return bad("map[%q] is empty", c)
		}
		for raw, name := range m {
			if name == "" {
				return bad("map[%q][%q] is empty, expected a group name", c, raw)
			}
		}
	}
	for c, edges := range s.Buckets {
		if !isCol[c] {
			return bad("buckets[%q] is given but %q is not in sensitive.columns", c, c)
		}
		if _, both := s.Map[c]; both {
			return bad("column %q has both map and buckets; expected one", c)
		}
		if len(edges) == 0 {
			return bad("buckets[%q] is empty, expected increasing edges", c)
		}
		for i, e := range edges {
			if math.IsNaN(e) || math.IsInf(e, 0) || (i > 0 && e <= edges[i-1]) {
				return bad("buckets[%q] must be finite and strictly increasing (entry %d is %v)", c, i, e)
			}
		}
	}
	if len(s.Columns) == 0 && len(s.Groups) > 0 {
		return bad("groups given without columns")
	}
	if err := uniqueStrings(s.Groups); err != nil {
		return bad("groups: %v", err)
	}
	return nil
}

func uniqueStrings(list []string) error {
	seen := make(map[string]bool, len(list))
	for _, v := range list {
		if seen[v] {
			return fmt.Errorf("%q appears twice", v)
		}
		seen[v] = true
	}
	return nil
}

// onMissing and onUnseen return the policies with their defaults filled in.
func (s Schema) onMissing() string {
	if s.OnMissing == "" {
		return MissingDropRow
	}
	return s.OnMissing
}

func (s Schema) onUnseen() string {
	if s.OnUnseen == "" {
		return UnseenError
	}
	return s.OnUnseen
}

// featureColumns returns the numeric and categorical feature columns in
// encoding order: numeric first, then categorical, each in schema order,
// then sensitive columns that are features but not listed.
func (s Schema) featureColumns() (numeric, categorical []string) {
	numeric = append([]string(nil), s.Numeric...)
	categorical = append([]string(nil), s.Categorical...)
	if s.SensitiveAsFeature {
		listed := map[string]bool{}
		for _, c := range numeric {
			listed[c] = true
		}
		for _, c := range categorical {
			listed[c] = true
		}
		for _, c := range s.Drop {
			listed[c] = true
		}
		for _, c := range s.Sensitive.Columns {
			if !listed[c] {
				categorical = append(categorical, c)
			}
		}
	}
	return numeric, categorical
}

// labelNames returns the names of labels 0..L-1 (nil without a label).
func (l LabelSpec) labelNames() []string {
	switch {
	case l.Column == "":
		return nil
	case len(l.Names) > 0:
		return append([]string(nil), l.Names...)
	case len(l.Classes) > 0:
		return append([]string(nil), l.Classes...)
	case l.Threshold != nil:
		t := formatNumber(*l.Threshold)
		return []string{l.Column + " <= " + t, l.Column + " > " + t}
	case len(l.Negative) > 0:
		return []string{l.Negative[0], l.Positive[0]}
	default:
		return []string{"not " + l.Positive[0], l.Positive[0]}
	}
}

func formatNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// bucketName names the right-closed bucket of v for increasing edges.
func bucketName(v float64, edges []float64) string {
	i := sort.SearchFloat64s(edges, v) // first edge >= v
	switch {
	case i == 0:
		return "<=" + formatNumber(edges[0])
	case i == len(edges):
		return ">" + formatNumber(edges[len(edges)-1])
	default:
		return "(" + formatNumber(edges[i-1]) + "," + formatNumber(edges[i]) + "]"
	}
}

// sortValues sorts category or group names: numerically when all of them
// are numbers (so "-2" < "-1" < "10"), otherwise as strings.
func sortValues(vals []string) {
	nums := make(map[string]float64, len(vals))
	for _, v := range vals {
		x, ok := parseNumber(v)
		if !ok {
			sort.Strings(vals)
			return
		}
		nums[v] = x
	}
	sort.Slice(vals, func(i, j int) bool {
		if nums[vals[i]] != nums[vals[j]] {
			return nums[vals[i]] < nums[vals[j]]
		}
		return vals[i] < vals[j]
	})
}

// oneVsRestNote says, for a label given by positive values alone, that
// every other value is negative, so that a column of three or more values
// becoming one-vs-rest is said, not silent. It reads the schema only, no
// record, so the note releases nothing of the data.
func (l LabelSpec) oneVsRestNote() string {
	if len(l.Positive) == 0 || len(l.Negative) > 0 {
		return ""
	}
	return fmt.Sprintf("label: %s of column %q are positive and every other value is negative (one-vs-rest if the column has "+
		"more than two values; list the schema's label \"negative\" values to have any other value refused)", quoteList(l.Positive, 10), l.Column)
}
