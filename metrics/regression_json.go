package metrics

import "encoding/json"

// regressionGroup is a group's row of a regression split in report.json:
// its MSPE (absent for a group without records) and nothing from the
// confusion matrix, which a regression has not got.
type regressionGroup struct {
	Group string   `json:"group"`
	N     int      `json:"n"`
	MSPE  *float64 `json:"mspe,omitempty"`
}

// MarshalJSON writes a regression split (MSPE set) without the
// classification numbers (error, accuracy, the two violations, and each
// group's accuracy, TPR, FPR and selection rate). Why: the struct holds
// them as zeros, and a consumer reading "error": 0, "accuracy": 0 sees a
// perfect classifier. A classification split is written field for field.
// Reading such a report back leaves those fields 0, as they were.
func (sp Split) MarshalJSON() ([]byte, error) {
	type plain Split // no methods: the default encoding
	if sp.MSPE == nil {
		return json.Marshal(plain(sp))
	}
	row := func(g GroupMetrics) regressionGroup { return regressionGroup{Group: g.Group, N: g.N, MSPE: g.MSPE} }
	out := struct {
		N       int               `json:"n"`
		Groups  []regressionGroup `json:"groups"`
		Overall *regressionGroup  `json:"overall,omitempty"`
		MSPE    *float64          `json:"mspe"`
	}{N: sp.N, MSPE: sp.MSPE}
	if sp.Groups != nil {
		out.Groups = make([]regressionGroup, len(sp.Groups))
		for i, g := range sp.Groups {
			out.Groups[i] = row(g)
		}
	}
	if sp.Overall != nil {
		o := row(*sp.Overall)
		out.Overall = &o
	}
	return json.Marshal(out)
}
