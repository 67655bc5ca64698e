package loaders

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tabFuzzSeeds are the committed tabular samples (and schemas) used as seed
// corpora, cut to their first 2,000 bytes: small seeds fuzz (and minimise)
// far faster, and the quirks are in the first lines.
func tabFuzzSeeds(f *testing.F, pattern string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data[:min(len(data), 2000)])
	}
	return out
}

// checkTable asserts the Table invariants every successful read must hold.
func checkTable(t *testing.T, tab *Table) {
	t.Helper()
	if len(tab.Line) != tab.Len() || len(tab.SourceOf) != tab.Len() || len(tab.Sources) != 1 {
		t.Fatalf("inconsistent table: %d rows, %d lines, %d sources", tab.Len(), len(tab.Line), len(tab.SourceOf))
	}
	for i, r := range tab.Cells {
		if len(r) != len(tab.Columns) {
			t.Fatalf("row %d has %d fields, %d columns", i, len(r), len(tab.Columns))
		}
		if tab.Line[i] < 1 || (i > 0 && tab.Line[i] <= tab.Line[i-1]) {
			t.Fatalf("line numbers not increasing: %v", tab.Line)
		}
	}
}

// FuzzCSVReader: no input may panic the reader or the preprocessing of what
// it read; errors must be *DataError naming the file.
func FuzzCSVReader(f *testing.F) {
	for _, data := range tabFuzzSeeds(f, "*.csv") {
		f.Add(data, uint8(0), true, false, uint8(0))
	}
	for _, name := range []string{"*.data", "*.test"} {
		for _, data := range tabFuzzSeeds(f, name) {
			f.Add(data, uint8(0), false, false, uint8(1))
		}
	}
	f.Add([]byte("a;b\r\n\"x;\"\"y\";2\r\n"), uint8(1), true, false, uint8(0))
	f.Add([]byte("\xef\xbb\xbfa\tb\n1\t\n"), uint8(2), true, true, uint8(2))
	f.Add([]byte("# c\n1 2\n3 4\n"), uint8(4), false, false, uint8(3))
	f.Fuzz(fuzzCSVReader)
}

func fuzzCSVReader(t *testing.T, data []byte, delim uint8, header, keepSpace bool, skip uint8) {
	{
		delims := []string{"", ";", "\t", ",", " "}
		format := CSVFormat{Delimiter: delims[int(delim)%len(delims)], Header: header, KeepSpace: keepSpace,
			SkipLines: int(skip % 4), Comment: "#"}
		tab, err := ReadCSVFrom(bytes.NewReader(data), "fuzz.csv", format)
		if err != nil {
			var de *DataError
			if !errors.As(err, &de) || de.File != "fuzz.csv" {
				t.Fatalf("error %v is not a *DataError naming the file", err)
			}
			return
		}
		checkTable(t, tab)
		if tab.Len() == 0 {
			return
		}
		// The first column as a binary label, the rest categorical, then the
		// rest numeric: whatever the cells, fitting and applying must either
		// fail with an error or give a valid Dataset.
		label := LabelSpec{Column: tab.Columns[0], Positive: []string{tab.Cells[0][0]}}
		for _, s := range []Schema{
			{Format: format, Label: label, Categorical: tab.Columns[1:], OnMissing: MissingImputeMode, OnUnseen: UnseenZero},
			{Format: format, Label: label, Numeric: tab.Columns[1:], OnMissing: MissingImputeMean},
			{Format: format, Label: label, Sensitive: SensitiveSpec{Columns: tab.Columns[1:min(2, len(tab.Columns))]},
				Categorical: tab.Columns[min(2, len(tab.Columns)):], OnUnseen: UnseenZero},
		} {
			p, err := NewPreprocessor(s)
			if err != nil {
				continue
			}
			if err := p.Fit(tab); err != nil {
				continue
			}
			d, err := p.Apply(tab)
			if err != nil {
				continue
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("invalid dataset: %v", err)
			}
			if d.Dim != p.Dim() || d.N() > tab.Len() {
				t.Fatalf("dataset %d×%d from %d rows, preprocessor dim %d", d.N(), d.Dim, tab.Len(), p.Dim())
			}
		}
	}
}

// fuzzSchemaTable is the fixed table FuzzParseSchema applies schemas to.
const fuzzSchemaTable = "age,sex,race,income,score\n39,Male,White,>50K,2.00E+05\n50,Female,Black,<=50K,1e-005\n" +
	"?,Male,Black,>50K.,3\n23,Female,White,<=50K,?\n61,Male,Asian,<=50K.,-4\n"

// FuzzParseSchema: no schema text may panic parsing, serialising, or fitting
// and applying it to a small table; accepted schemas survive a JSON round
// trip.
func FuzzParseSchema(f *testing.F) {
	for _, p := range []string{"adult_sample.schema.json", "quirks.schema.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, name := range BuiltinNames() {
		s, _ := Builtin(name)
		data, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"label": {"column": "income", "positive": [">50K", ">50K."]}, "numeric": ["age", "score"],
		"sensitive": {"columns": ["sex", "race"], "map": {"sex": {"Male": "M", "Female": "F"}}}, "on_missing": "impute-mean"}`))
	f.Add([]byte(`{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["s"]}, "numeric": ["x"],
		"rename": {"#4": "x2", "old": "new"}, "filter": {"kind": ["keep", "1.0"]}, "drop": [""], "drop_rest": true}`))
	f.Add([]byte(`{"target": "score", "label": {"column": "age", "threshold": 40}, "categorical": ["race", "income"],
		"sensitive": {"columns": ["sex"], "groups": ["Male", "Female"]}, "on_unseen": "zero"}`))
	f.Add([]byte(`{"label": {"column": "race", "classes": ["White", "Black", "Asian"]}, "drop": ["income", "score"],
		"sensitive": {"columns": ["age"], "buckets": {"age": [30, 50]}}, "sensitive_as_feature": true, "categorical": ["sex"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema(data)
		if err != nil {
			return
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal an accepted schema: %v", err)
		}
		back, err := ParseSchema(js)
		if err != nil {
			t.Fatalf("a marshalled schema is rejected: %v\n%s", err, js)
		}
		js2, _ := json.Marshal(back)
		if !bytes.Equal(js, js2) {
			t.Fatalf("JSON round trip changed the schema:\n%s\n%s", js, js2)
		}
		p, err := NewPreprocessor(s)
		if err != nil {
			t.Fatalf("a valid schema is rejected by NewPreprocessor: %v", err)
		}
		format := CSVFormat{Header: true, Missing: s.Format.Missing}
		tab, err := ReadCSVFrom(strings.NewReader(fuzzSchemaTable), "table.csv", format)
		if err != nil {
			return // e.g. a missing-token list that makes no difference here
		}
		if err := p.Fit(tab); err != nil {
			return
		}
		d, err := p.Apply(tab)
		if err != nil {
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("invalid dataset: %v", err)
		}
		state, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal a fitted preprocessor: %v", err)
		}
		var p2 Preprocessor
		if err := json.Unmarshal(state, &p2); err != nil {
			t.Fatalf("unmarshal a fitted preprocessor: %v\n%s", err, state)
		}
	})
}
