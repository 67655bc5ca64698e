package loaders

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadCSVFromHandlesRealFileQuirks(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		format  CSVFormat
		columns []string
		cells   [][]string
		lines   []int
	}{
		{
			name:    "header, quotes with delimiter, doubled quote and line break",
			in:      "a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",z\n3,q,r\n",
			format:  CSVFormat{Header: true},
			columns: []string{"a", "b", "c"},
			cells:   [][]string{{"1", "x, y", `say "hi"`}, {"2", "two\nlines", "z"}, {"3", "q", "r"}},
			lines:   []int{2, 3, 5},
		},
		{
			name:    "CRLF and a UTF-8 BOM before the header",
			in:      "\xef\xbb\xbfid,v\r\n1,2.00E+05\r\n2,1e-005\r\n",
			format:  CSVFormat{Header: true},
			columns: []string{"id", "v"},
			cells:   [][]string{{"1", "2.00E+05"}, {"2", "1e-005"}},
			lines:   []int{2, 3},
		},
		{
			name:    "Adult test file: comment first line, comma+space, trailing empty line",
			in:      "|1x3 Cross validator\n25, Private, <=50K.\n38, ?, >50K.\n\n",
			format:  CSVFormat{Comment: "|", Columns: []string{"age", "workclass", "income"}},
			columns: []string{"age", "workclass", "income"},
			cells:   [][]string{{"25", "Private", "<=50K."}, {"38", "?", ">50K."}},
			lines:   []int{2, 3},
		},
		{
			name:    "skip_lines instead of a comment, semicolon delimiter, generated names",
			in:      "title line\nsecond title\n1;2\n3;4",
			format:  CSVFormat{SkipLines: 2, Delimiter: ";"},
			columns: []string{"column1", "column2"},
			cells:   [][]string{{"1", "2"}, {"3", "4"}},
			lines:   []int{3, 4},
		},
		{
			name:    "tab delimiter, blank and whitespace-only lines skipped",
			in:      "x\ty\n\n1\t2\n   \n3\t4\n",
			format:  CSVFormat{Header: true, Delimiter: "\t"},
			columns: []string{"x", "y"},
			cells:   [][]string{{"1", "2"}, {"3", "4"}},
			lines:   []int{3, 5},
		},
		{
			name:    "keep_space keeps spaces; an empty header name becomes columnK",
			in:      ",a\n 1 , b \n",
			format:  CSVFormat{Header: true, KeepSpace: true},
			columns: []string{"column1", "a"},
			cells:   [][]string{{" 1 ", " b "}},
			lines:   []int{2},
		},
		{
			name:    "header matches format.columns",
			in:      "p,q\n1,2\n",
			format:  CSVFormat{Header: true, Columns: []string{"p", "q"}},
			columns: []string{"p", "q"},
			cells:   [][]string{{"1", "2"}},
			lines:   []int{2},
		},
		{
			name:    "header only",
			in:      "p,q\r\n",
			format:  CSVFormat{Header: true},
			columns: []string{"p", "q"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab, err := ReadCSVFrom(strings.NewReader(c.in), "t.csv", c.format)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tab.Columns, c.columns) {
				t.Errorf("columns %q, want %q", tab.Columns, c.columns)
			}
			if len(tab.Cells) != len(c.cells) || (len(c.cells) > 0 && !reflect.DeepEqual(tab.Cells, c.cells)) {
				t.Errorf("cells %q, want %q", tab.Cells, c.cells)
			}
			if len(tab.Line) != len(c.lines) || (len(c.lines) > 0 && !reflect.DeepEqual(tab.Line, c.lines)) {
				t.Errorf("lines %v, want %v", tab.Line, c.lines)
			}
			if !reflect.DeepEqual(tab.Sources, []string{"t.csv"}) || len(tab.SourceOf) != len(tab.Cells) {
				t.Errorf("sources %q / %v", tab.Sources, tab.SourceOf)
			}
		})
	}
}

func TestReadCSVErrorsNameFileLineAndExpectation(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		format CSVFormat
		want   []string // substrings of the message
		line   int
	}{
		{"short row", "a,b,c\n1,2,3\n4,5\n", CSVFormat{Header: true},
			[]string{"bad.csv:3:", "expected 3 fields (as in the header), got 2"}, 3},
		{"long row after a quoted line break", "a,b\n1,\"x\ny\"\n2,3,4\n", CSVFormat{Header: true},
			[]string{"bad.csv:4:", "expected 2 fields", "got 3"}, 4},
		{"row wider than format.columns", "1,2,3\n", CSVFormat{Columns: []string{"a", "b"}},
			[]string{"bad.csv:1:", "expected 2 fields (as in format.columns), got 3"}, 1},
		{"row differs from the first row", "1,2\n3\n", CSVFormat{},
			[]string{"bad.csv:2:", "(as in the first row, line 1)"}, 2},
		{"bare quote", "a,b\n1,x\"y\n", CSVFormat{Header: true},
			[]string{"bad.csv:2:", "malformed field", "quote"}, 2},
		{"unterminated quote", "a,b\n1,\"open\n2,3\n", CSVFormat{Header: true},
			[]string{"bad.csv:3:", "malformed field", "record that starts on line 2"}, 3},
		{"header differs from format.columns", "a,c\n1,2\n", CSVFormat{Header: true, Columns: []string{"a", "b"}},
			[]string{"bad.csv:1:", `header field 2 is "c", format.columns expects "b"`}, 1},
		{"empty file with header", "", CSVFormat{Header: true},
			[]string{"bad.csv:", "no header line"}, 0},
		{"two-character delimiter", "a", CSVFormat{Delimiter: ", "},
			[]string{"bad.csv:", "format.delimiter", "exactly one character"}, 0},
		{"comment equals delimiter", "a", CSVFormat{Comment: ","},
			[]string{"format.comment", "must differ"}, 0},
		{"negative skip", "a", CSVFormat{SkipLines: -1},
			[]string{"format.skip_lines is -1"}, 0},
		{"quote as delimiter", "a", CSVFormat{Delimiter: `"`},
			[]string{"format.delimiter", "cannot be used"}, 0},
		{"broken gzip", "\x1f\x8b\x00\x00", CSVFormat{},
			[]string{"bad.csv:", "gzip"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSVFrom(strings.NewReader(c.in), "bad.csv", c.format)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var de *DataError
			if !errors.As(err, &de) || de.File != "bad.csv" {
				t.Fatalf("error %v is not a *DataError naming bad.csv", err)
			}
			if c.line > 0 && de.Line != c.line {
				t.Errorf("line %d, want %d", de.Line, c.line)
			}
		})
	}
}

func TestParseNumberAcceptsDataFileSpellings(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"42", 42, true},
		{"-1.5", -1.5, true},
		{"2.00E+05", 200000, true},   // credit LIMIT_BAL
		{"3.38e-005", 3.38e-5, true}, // parkinsons Jitter(Abs)
		{"1e-005", 1e-5, true},
		{"+7", 7, true},
		{".5", 0.5, true},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"-infinity", 0, false},
		{"1e400", 0, false},
		{"", 0, false},
		{"abc", 0, false},
		{"1,5", 0, false},
		{" 1", 0, false}, // cells are trimmed before; the parser does not trim
	}
	for _, c := range cases {
		got, ok := parseNumber(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseNumber(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestIsMissingTokens(t *testing.T) {
	def := CSVFormat{}
	custom := CSVFormat{Missing: []string{"NA", "-"}}
	none := CSVFormat{Missing: []string{}}
	cases := []struct {
		f    CSVFormat
		cell string
		want bool
	}{
		{def, "?", true}, {def, "", true}, {def, "NA", false}, {def, "0", false},
		{custom, "NA", true}, {custom, "-", true}, {custom, "?", false}, {custom, "", false},
		{none, "", false}, {none, "?", false},
	}
	for _, c := range cases {
		if got := c.f.IsMissing(c.cell); got != c.want {
			t.Errorf("%v.IsMissing(%q) = %v, want %v", c.f.Missing, c.cell, got, c.want)
		}
	}
}

func TestReadCSVQuirksFile(t *testing.T) {
	tab, err := ReadCSV(filepath.Join("testdata", "quirks.csv"), CSVFormat{Header: true})
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []string{"id", "name", "score", "note, free text", "group"}
	wantCells := [][]string{
		{"1", "Smith, Jane", "2.00E+05", `said "hi"`, "a"},
		{"2", "Doe", "1e-005", "two\nlines", "b"}, // encoding/csv turns a quoted CRLF into LF
		{"3", "?", "NA", "", "a"},
	}
	if !reflect.DeepEqual(tab.Columns, wantCols) || !reflect.DeepEqual(tab.Cells, wantCells) {
		t.Fatalf("got %q / %q", tab.Columns, tab.Cells)
	}
	if !reflect.DeepEqual(tab.Line, []int{2, 3, 5}) {
		t.Errorf("lines %v, want [2 3 5]", tab.Line)
	}
}

func TestReadCSVReadsGzipAndFallsBackToDotGz(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte("a,b\n1,2\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.csv.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x.csv", "x.csv.gz"} {
		tab, err := ReadCSV(filepath.Join(dir, name), CSVFormat{Header: true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tab.Cells, [][]string{{"1", "2"}}) {
			t.Errorf("%s: cells %q", name, tab.Cells)
		}
	}
	if _, err := ReadCSV(filepath.Join(dir, "absent.csv"), CSVFormat{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v, want a not-exist error", err)
	}
}

func TestTableAppend(t *testing.T) {
	a := &Table{Columns: []string{"x", "y"}, Cells: [][]string{{"1", "2"}}, Line: []int{2}, SourceOf: []int{0}, Sources: []string{"a.csv"}}
	b := &Table{Columns: []string{"x", "y"}, Cells: [][]string{{"3", "4"}, {"5", "6"}}, Line: []int{7, 9}, SourceOf: []int{0, 0}, Sources: []string{"b.csv"}}
	if err := a.Append(b); err != nil {
		t.Fatal(err)
	}
	if a.Len() != 3 || !reflect.DeepEqual(a.SourceOf, []int{0, 1, 1}) || !reflect.DeepEqual(a.Line, []int{2, 7, 9}) ||
		!reflect.DeepEqual(a.Sources, []string{"a.csv", "b.csv"}) {
		t.Errorf("joined table %+v", a)
	}
	c := &Table{Columns: []string{"x", "z"}, Sources: []string{"c.csv"}}
	if err := a.Append(c); err == nil || !strings.Contains(err.Error(), `column 2 is "z" there and "y" here`) {
		t.Errorf("mismatched columns: %v", err)
	}
	d := &Table{Columns: []string{"x"}, Sources: []string{"d.csv"}}
	if err := a.Append(d); err == nil || !strings.Contains(err.Error(), "1 columns") {
		t.Errorf("wrong width: %v", err)
	}
}

func TestDataErrorFormat(t *testing.T) {
	cases := []struct {
		e    DataError
		want string
	}{
		{DataError{File: "a.csv", Line: 3, Field: "age", Msg: "expected a number"}, `a.csv:3: column "age": expected a number`},
		{DataError{File: "a.csv", Msg: "empty"}, "a.csv: empty"},
		{DataError{Msg: "x"}, "<input>: x"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestHostileFiles: a UTF-16 file is named as such (not
// "expected 5 fields, got 1"), and a huge field is not echoed whole.
func TestHostileFiles(t *testing.T) {
	utf16 := func(s string, bom []byte, le bool) []byte {
		out := append([]byte(nil), bom...)
		for _, c := range []byte(s) {
			if le {
				out = append(out, c, 0)
			} else {
				out = append(out, 0, c)
			}
		}
		return out
	}
	text := "a,b,c,d,e\n1,2,3,4,5\n"
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"le bom", utf16(text, []byte{0xFF, 0xFE}, true)},
		{"be bom", utf16(text, []byte{0xFE, 0xFF}, false)},
		{"no bom", utf16(text, nil, true)},
	} {
		_, err := ReadCSVFrom(bytes.NewReader(tc.data), "x.csv", CSVFormat{Header: true})
		if err == nil || !strings.Contains(err.Error(), "UTF-16") || !strings.Contains(err.Error(), "iconv") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	huge := strings.Repeat("z", 10<<20)
	s, err := ParseSchema([]byte(`{"format":{"header":true},"label":{"column":"y","positive":["1"]},"sensitive":{"columns":["s"]},"numeric":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"x.csv": &fstest.MapFile{Data: []byte("a,s,y\n1,p,1\n" + huge + ",q,0\n")}}
	_, _, _, err = LoadCSV(CSVOptions{Schema: s, Files: []string{"x.csv"}, FS: fsys, Split: SplitOptions{Rand: rand.New(rand.NewPCG(1, 1))}})
	if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "more bytes not shown") {
		t.Errorf("a 10 MB field gave an error of %d bytes: %.200s", len(fmt.Sprint(err)), fmt.Sprint(err))
	}
}
