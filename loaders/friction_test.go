package loaders

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// loadFriction reads csv with the schema JSON (a random 75/25 split).
func loadFriction(t *testing.T, csv, schema string) (*Dataset, *Dataset, error) {
	t.Helper()
	s, err := ParseSchema([]byte(schema))
	if err != nil {
		return nil, nil, err
	}
	fsys := fstest.MapFS{"f.csv": &fstest.MapFile{Data: []byte(csv)}}
	train, test, _, err := LoadCSV(CSVOptions{Schema: s, Files: []string{"f.csv"}, FS: fsys, Split: SplitOptions{Rand: rand.New(rand.NewPCG(1, 2))}})
	return train, test, err
}

// TestSchemaFriction: the keys that let a CSV from the
// wild be read without renaming every column by hand.
func TestSchemaFriction(t *testing.T) {
	// An unnamed index column, a repeated header name, extra columns, a
	// label written as 1.0 and a row filter.
	csv := ",x,dup,dup,junk1,junk2,kind,s,y\n"
	for i := range 40 {
		kind := []string{"keep", "other"}[i%2]
		group := []string{"a", "b"}[i%4/2]
		label := []string{"1.0", "0.0"}[i%3%2]
		csv += strings.Join([]string{strconv.Itoa(i), strconv.Itoa(i % 5), "7", strconv.Itoa(i % 3), "j", "k", kind, group, label}, ",") + "\n"
	}
	base := `"format": {"header": true}, "label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["s"]}`
	for _, tc := range []struct {
		name, schema string
		want         string // error substring; "" means success
		check        func(*testing.T, *Dataset, *Dataset)
	}{
		{"strict by default", `{` + base + `, "numeric": ["x"], "drop": ["", "dup", "junk1", "junk2", "kind"]}`, "", nil},
		{"unlisted columns refused with the way out", `{` + base + `, "numeric": ["x"]}`, `"drop_rest": true`, nil},
		{"drop_rest", `{` + base + `, "numeric": ["x"], "drop_rest": true}`, "", func(t *testing.T, train, test *Dataset) {
			if train.Dim != 1 {
				t.Errorf("dim %d, want 1 (only x)", train.Dim)
			}
		}},
		{"repeated name used unrenamed", `{` + base + `, "numeric": ["x", "dup"], "drop_rest": true}`, `"rename": {"#4"`, nil},
		{"rename by position", `{` + base + `, "rename": {"#4": "dup2"}, "numeric": ["x", "dup", "dup2"], "drop_rest": true}`, "",
			func(t *testing.T, train, test *Dataset) {
				if strings.Join(train.FeatureNames, ",") != "x,dup,dup2" {
					t.Errorf("features %v", train.FeatureNames)
				}
			}},
		{"label 1.0 matches 1", `{` + base + `, "numeric": ["x"], "drop_rest": true}`, "", func(t *testing.T, train, test *Dataset) {
			pos := 0
			for _, y := range append(train.Labels, test.Labels...) {
				pos += y
			}
			if pos == 0 {
				t.Error("no record has label 1: 1.0 did not match \"1\"")
			}
		}},
		{"filter", `{` + base + `, "numeric": ["x"], "drop_rest": true, "filter": {"kind": ["keep"]}}`, "",
			func(t *testing.T, train, test *Dataset) {
				if n := train.N() + test.N(); n != 20 {
					t.Errorf("%d rows kept, want the 20 of kind keep", n)
				}
				if !strings.Contains(strings.Join(train.Notes, "|"), "filter dropped 20 rows") {
					t.Errorf("notes %v", train.Notes)
				}
			}},
		{"filter on a missing column", `{` + base + `, "numeric": ["x"], "drop_rest": true, "filter": {"nope": ["1"]}}`, "filters on this column", nil},
		{"bad rename", `{` + base + `, "numeric": ["x"], "drop_rest": true, "rename": {"#99": "z"}}`, "#1 … #9", nil},
	} {
		train, test, err := loadFriction(t, csv, tc.schema)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.check != nil {
			tc.check(t, train, test)
		}
	}
}
