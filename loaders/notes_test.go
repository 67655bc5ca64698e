package loaders

import (
	"strings"
	"testing"
)

// TestNotesOneVsRestAndCounts: a label given by
// positive values alone is said to make every other value negative (a
// three-valued column became one-vs-rest without a word), from the schema
// alone; and a set whose notes count records (rows dropped or filtered
// before the split, cells imputed) is marked NotesCountRecords, so a
// private run can declare the counts outside its guarantee.
func TestNotesOneVsRestAndCounts(t *testing.T) {
	// 40 rows, y of three values, kind alternating; with missing, every
	// fifth x is missing (so both splits of 30/10 hold some).
	table := func(missing bool) string {
		csv := "x,kind,s,y\n"
		for i := range 40 {
			x := []string{"1", "2", "3", "4", "5"}[i%5]
			if missing && i%5 == 0 {
				x = "?"
			}
			csv += strings.Join([]string{x, []string{"keep", "other"}[i%2], []string{"a", "b"}[i%4/2], []string{"lo", "mid", "hi"}[i%3]}, ",") + "\n"
		}
		return csv
	}
	const oneVsRest = `label: "hi" of column "y" are positive and every other value is negative`
	positive := `"label": {"column": "y", "positive": ["hi"]}`
	for _, tc := range []struct {
		name, schema string
		missing      bool
		oneVsRest    bool
		counts       bool
	}{
		{"positive only, rows dropped", positive + `, "on_missing": "drop-row", "drop": ["kind"]`, true, true, true},
		{"positive and negative", `"label": {"column": "y", "positive": ["hi"], "negative": ["lo", "mid"]}, "drop": ["kind"]`, false, false, false},
		{"classes, cells imputed", `"label": {"column": "y", "classes": ["lo", "mid", "hi"]}, "on_missing": "impute-mean", "drop": ["kind"]`, true, false, true},
		{"positive only, nothing counted", positive + `, "drop": ["kind"]`, false, true, false},
		{"a filter drops rows", positive + `, "filter": {"kind": ["keep"]}`, false, true, true},
	} {
		schema := `{"format": {"header": true, "missing": ["?"]}, "sensitive": {"columns": ["s"]}, "numeric": ["x"], ` + tc.schema + `}`
		train, test, err := loadFriction(t, table(tc.missing), schema)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, d := range []*Dataset{train, test} {
			if got := strings.Contains(strings.Join(d.Notes, "\n"), oneVsRest); got != tc.oneVsRest {
				t.Errorf("%s, %s: one-vs-rest note %v, want %v; notes %q", tc.name, d.Name, got, tc.oneVsRest, d.Notes)
			}
		}
		if train.NotesCountRecords != tc.counts {
			t.Errorf("%s: NotesCountRecords %v, want %v; notes %q", tc.name, train.NotesCountRecords, tc.counts, train.Notes)
		}
	}
}
