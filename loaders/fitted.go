package loaders

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CompatibleWith says whether data described by s can be encoded with p's
// fitted preprocessing: the same label and sensitive definitions and the
// same numeric and categorical columns. Order does not matter (p encodes by
// column name, in its own fitted order); a missing, extra or redefined
// column is an error that names it. It is what lets `fairdp eval` apply a
// checkpoint's preprocessing to data read with another schema file without
// silently scoring features in the wrong order.
func (p *Preprocessor) CompatibleWith(s Schema) error {
	fitted := p.schema
	var diffs []string
	setDiff := func(role string, want, got []string) {
		missing, extra := minus(want, got), minus(got, want)
		if len(missing) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s columns %s are in the checkpoint but not in the schema given", role, quoteAll(missing)))
		}
		if len(extra) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s columns %s are in the schema given but not in the checkpoint", role, quoteAll(extra)))
		}
	}
	gotNum, gotCat := s.featureColumns()
	wantNum, wantCat := fitted.featureColumns()
	setDiff("numeric", wantNum, gotNum)
	setDiff("categorical", wantCat, gotCat)
	if !sameJSON(fitted.Label, s.Label) {
		diffs = append(diffs, fmt.Sprintf("the label differs: checkpoint %s, schema given %s", asJSON(fitted.Label), asJSON(s.Label)))
	}
	if !sameJSON(fitted.Sensitive, s.Sensitive) {
		diffs = append(diffs, fmt.Sprintf("the sensitive attribute differs: checkpoint %s, schema given %s",
			asJSON(fitted.Sensitive), asJSON(s.Sensitive)))
	}
	if !sameJSON(sortedFilter(fitted.Filter), sortedFilter(s.Filter)) {
		// The rows kept are the model's population: scoring other rows under
		// the checkpoint's filter would say nothing of the filter given.
		diffs = append(diffs, fmt.Sprintf("the filter differs: checkpoint %s, schema given %s (filter the file yourself and give it as the data, "+
			"or use the checkpoint's filter)", asJSON(fitted.Filter), asJSON(s.Filter)))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the data's schema does not match the checkpoint's preprocessing: %s", strings.Join(diffs, "; "))
	}
	return nil
}

func minus(a, b []string) []string {
	var out []string
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

func quoteAll(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sameJSON(a, b any) bool { return asJSON(a) == asJSON(b) }

// sortedFilter is f with each column's values sorted and an empty filter
// nil, so that filters keeping the same rows compare equal.
func sortedFilter(f map[string][]string) map[string][]string {
	if len(f) == 0 {
		return nil
	}
	out := make(map[string][]string, len(f))
	for c, v := range f {
		out[c] = slices.Sorted(slices.Values(v))
	}
	return out
}
