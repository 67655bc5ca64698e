package loaders

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DataError reports rejected input with enough context to open the file at
// the offending line: the file, the 1-based line, the column and what was
// expected.
type DataError struct {
	File  string // file name as given, or "embedded:…" for the built-in copy
	Line  int    // 1-based physical line in File; 0 when about the whole file
	Field string // column name; "" when not about one column
	Msg   string // what was wrong and what was expected
}

// Error renders "file:line: column "name": message".
func (e *DataError) Error() string {
	var b strings.Builder
	if e.File == "" {
		b.WriteString("<input>")
	} else {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "column %q: ", capText(e.Field))
	}
	b.WriteString(capText(e.Msg))
	return b.String()
}

// maxErrorText caps what an error quotes from a file: a malformed file can
// hold a field of megabytes, and an error message must stay readable.
const maxErrorText = 400

// capText shortens s to maxErrorText bytes (at a rune boundary) and says
// how much was cut.
func capText(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes not shown)", s[:cut], len(s)-cut)
}

// CSVFormat says how a delimited text file is written. The zero value reads a
// comma-separated file without a header whose columns are named column1,
// column2, …, trims spaces around fields and treats "" and "?" as missing.
type CSVFormat struct {
	// Delimiter is one character; "" means ",". Adult's ", " is "," with
	// the default trimming.
	Delimiter string `json:"delimiter,omitempty"`
	// Header says the first data line holds the column names. If Columns is
	// also given, the header must match it exactly (a check that the file is
	// the one the schema describes).
	Header bool `json:"header,omitempty"`
	// Columns names the columns of a file without a header (or of a file
	// whose header is skipped with SkipLines).
	Columns []string `json:"columns,omitempty"`
	// SkipLines lines are skipped at the start of every file, before the
	// header (after a UTF-8 byte-order mark).
	SkipLines int `json:"skip_lines,omitempty"`
	// Comment is one character; lines starting with it are skipped (Adult's
	// test file starts with "|1x3 Cross validator").
	Comment string `json:"comment,omitempty"`
	// KeepSpace keeps spaces around fields; by default they are trimmed.
	KeepSpace bool `json:"keep_space,omitempty"`
	// Missing lists the cell values (after trimming) that mean "missing".
	// nil means {"", "?"}; an empty list means no value is missing.
	Missing []string `json:"missing"`
}

// defaultMissing is used when CSVFormat.Missing is nil.
var defaultMissing = []string{"", "?"}

// IsMissing reports whether a (trimmed) cell is one of the missing tokens.
func (f CSVFormat) IsMissing(cell string) bool {
	tokens := f.Missing
	if tokens == nil {
		tokens = defaultMissing
	}
	for _, m := range tokens {
		if cell == m {
			return true
		}
	}
	return false
}

// Validate checks the format on its own, before any file is read.
func (f CSVFormat) Validate() error {
	delim, err := oneRune("format.delimiter", f.Delimiter, ',')
	if err != nil {
		return err
	}
	comment, err := oneRune("format.comment", f.Comment, 0)
	if err != nil {
		return err
	}
	if comment != 0 && comment == delim {
		return fmt.Errorf("format.comment %q must differ from the delimiter", f.Comment)
	}
	if f.SkipLines < 0 {
		return fmt.Errorf("format.skip_lines is %d, expected 0 or more", f.SkipLines)
	}
	seen := make(map[string]int, len(f.Columns))
	for i, c := range f.Columns {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("format.columns[%d] is empty, expected a column name", i)
		}
		if j, dup := seen[c]; dup {
			return fmt.Errorf("format.columns names %q twice (entries %d and %d)", c, j, i)
		}
		seen[c] = i
	}
	return nil
}

// oneRune parses a one-character option; "" gives def.
func oneRune(key, s string, def rune) (rune, error) {
	if s == "" {
		return def, nil
	}
	r, size := utf8.DecodeRuneInString(s)
	if size != len(s) || r == utf8.RuneError {
		return 0, fmt.Errorf("%s is %q, expected exactly one character", key, s)
	}
	if r == '"' || r == '\r' || r == '\n' {
		return 0, fmt.Errorf("%s is %q, which cannot be used (quote or line break)", key, s)
	}
	return r, nil
}

// Table holds the raw cells of one or more delimited files, before any
// schema is applied. Cells are trimmed (unless KeepSpace) but otherwise as
// written; Line and SourceOf say where each row came from.
type Table struct {
	Columns  []string
	Cells    [][]string // Cells[i][j] is row i, column j
	Line     []int      // 1-based physical line where row i starts in its file
	SourceOf []int      // row i came from Sources[SourceOf[i]]
	Sources  []string

	filtered int // rows the schema's filter dropped in the last parse (for the notes)
}

// Len is the number of data rows.
func (t *Table) Len() int { return len(t.Cells) }

// ColumnIndex returns the position of a column, or -1.
func (t *Table) ColumnIndex(name string) int {
	for j, c := range t.Columns {
		if c == name {
			return j
		}
	}
	return -1
}

// Append adds the rows of u, which must have the same columns (joining
// Adult's two files, for instance).
func (t *Table) Append(u *Table) error {
	if len(t.Columns) != len(u.Columns) {
		return fmt.Errorf("cannot join %s (%d columns) to %s (%d columns)",
			strings.Join(u.Sources, ", "), len(u.Columns), strings.Join(t.Sources, ", "), len(t.Columns))
	}
	for j := range t.Columns {
		if t.Columns[j] != u.Columns[j] {
			return fmt.Errorf("cannot join %s to %s: column %d is %q there and %q here",
				strings.Join(u.Sources, ", "), strings.Join(t.Sources, ", "), j+1, u.Columns[j], t.Columns[j])
		}
	}
	off := len(t.Sources)
	t.Sources = append(t.Sources, u.Sources...)
	t.Cells = append(t.Cells, u.Cells...)
	t.Line = append(t.Line, u.Line...)
	for _, s := range u.SourceOf {
		t.SourceOf = append(t.SourceOf, s+off)
	}
	return nil
}

// ReadCSV reads a delimited file. A file that does not exist may also be
// stored gzipped as path+".gz"; gzip content is recognised by its magic
// bytes and decompressed.
func ReadCSV(path string, f CSVFormat) (*Table, error) {
	return ReadCSVFS(nil, path, f)
}

// ReadCSVFS is ReadCSV on a file system (nil means the operating system's,
// with name a path). It is how the embedded Adult copy is read.
func ReadCSVFS(fsys fs.FS, name string, f CSVFormat) (*Table, error) {
	rc, err := openData(fsys, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ReadCSVFrom(rc, name, f)
}

// openData opens name, falling back to name+".gz".
func openData(fsys fs.FS, name string) (io.ReadCloser, error) {
	open := func(n string) (io.ReadCloser, error) {
		if fsys == nil {
			return os.Open(n)
		}
		return fsys.Open(n)
	}
	rc, err := open(name)
	if err == nil {
		return rc, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if gz, gzErr := open(name + ".gz"); gzErr == nil {
			return gz, nil
		}
	}
	return nil, err
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ReadCSVFrom reads delimited text from r; name is used in errors and as
// the table's source. Quoted fields may contain delimiters, doubled quotes
// and line breaks; CRLF and LF line ends, a UTF-8 byte-order mark, gzip
// compression and empty lines are handled. Every row must have as many
// fields as the header (or Columns, or the first row).
func ReadCSVFrom(r io.Reader, name string, f CSVFormat) (*Table, error) {
	if err := f.Validate(); err != nil {
		return nil, &DataError{File: name, Msg: err.Error()}
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &DataError{File: name, Msg: "looks gzip-compressed but cannot be decompressed: " + err.Error()}
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	if head, _ := br.Peek(len(utf8BOM)); string(head) == string(utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	if enc := utf16Encoding(br); enc != "" {
		return nil, &DataError{File: name, Line: 1, Msg: "the file is " + enc + " text; fairdp reads UTF-8: convert it first " +
			"(e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8.csv)"}
	}
	skipped, err := skipLines(br, f.SkipLines)
	if err != nil {
		return nil, &DataError{File: name, Line: skipped + 1, Msg: err.Error()}
	}

	delim, _ := oneRune("", f.Delimiter, ',')
	comment, _ := oneRune("", f.Comment, 0)
	cr := csv.NewReader(br)
	cr.Comma = delim
	cr.Comment = comment
	cr.FieldsPerRecord = -1 // checked below, with a better message
	cr.TrimLeadingSpace = !f.KeepSpace

	t := &Table{Sources: []string{name}}
	width := 0
	widthFrom := ""
	if len(f.Columns) > 0 {
		width, widthFrom = len(f.Columns), " (as in format.columns)"
		if !f.Header {
			t.Columns = append([]string(nil), f.Columns...)
		}
	}
	needHeader := f.Header
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				where := fmt.Sprintf("character %d", pe.Column)
				if pe.StartLine != pe.Line {
					where += fmt.Sprintf(" of a record that starts on line %d", pe.StartLine+skipped)
				}
				return nil, &DataError{File: name, Line: pe.Line + skipped,
					Msg: fmt.Sprintf("malformed field at %s: %v (quote fields that contain quotes, delimiters or line breaks, and double the quotes inside)", where, pe.Err)}
			}
			line, _ := cr.FieldPos(0)
			return nil, &DataError{File: name, Line: line + skipped, Msg: "read failed: " + err.Error()}
		}
		line, _ := cr.FieldPos(0)
		line += skipped
		if !f.KeepSpace {
			for j := range rec {
				rec[j] = strings.TrimSpace(rec[j])
			}
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" && width != 1 {
			continue // a blank line (e.g. only spaces), not a record
		}
		if needHeader {
			needHeader = false
			cols, err := headerColumns(rec, f.Columns)
			if err != nil {
				return nil, &DataError{File: name, Line: line, Msg: err.Error()}
			}
			t.Columns = cols
			width, widthFrom = len(cols), " (as in the header)"
			continue
		}
		if width == 0 {
			width, widthFrom = len(rec), fmt.Sprintf(" (as in the first row, line %d)", line)
			t.Columns = make([]string, width)
			for j := range t.Columns {
				t.Columns[j] = "column" + strconv.Itoa(j+1)
			}
		}
		if len(rec) != width {
			return nil, &DataError{File: name, Line: line,
				Msg: fmt.Sprintf("expected %d fields%s, got %d", width, widthFrom, len(rec))}
		}
		t.Cells = append(t.Cells, rec)
		t.Line = append(t.Line, line)
		t.SourceOf = append(t.SourceOf, 0)
	}
	if needHeader {
		return nil, &DataError{File: name, Msg: "no header line: the file is empty (format.header is true)"}
	}
	return t, nil
}

// skipLines discards n lines and returns how many were skipped.
func skipLines(br *bufio.Reader, n int) (int, error) {
	for i := 0; i < n; i++ {
		for {
			_, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				return i, nil
			}
			if err != nil {
				return i, err
			}
			break
		}
	}
	return n, nil
}

// headerColumns turns a header record into column names; an empty name
// becomes column<k> (as written by spreadsheet exports of an index column).
func headerColumns(rec, want []string) ([]string, error) {
	cols := make([]string, len(rec))
	seen := make(map[string]int, len(rec))
	for j, c := range rec {
		if c == "" {
			c = "column" + strconv.Itoa(j+1)
		}
		// A repeated name is kept: the schema may rename one of them
		// ("rename": {"#N": …}); using it unrenamed is an error there.
		if _, dup := seen[c]; !dup {
			seen[c] = j
		}
		cols[j] = c
	}
	if len(want) > 0 {
		if len(want) != len(cols) {
			return nil, fmt.Errorf("header has %d columns, format.columns expects %d", len(cols), len(want))
		}
		for j := range want {
			if want[j] != cols[j] {
				return nil, fmt.Errorf("header field %d is %q, format.columns expects %q", j+1, cols[j], want[j])
			}
		}
	}
	return cols, nil
}

// parseNumber reads a finite number as written in data files: "42",
// "-1.5", "2.00E+05", "3.38e-005".
func parseNumber(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// utf16Encoding recognises UTF-16 text by its byte-order mark, or, without
// one, by NUL bytes between the characters of the first line (ASCII written
// as UTF-16); "" means not UTF-16.
func utf16Encoding(br *bufio.Reader) string {
	head, _ := br.Peek(512)
	switch {
	case len(head) >= 2 && head[0] == 0xFF && head[1] == 0xFE:
		return "UTF-16 (little-endian, with a byte-order mark)"
	case len(head) >= 2 && head[0] == 0xFE && head[1] == 0xFF:
		return "UTF-16 (big-endian, with a byte-order mark)"
	}
	if len(head) < 8 {
		return ""
	}
	zeros := 0
	for _, c := range head {
		if c == 0 {
			zeros++
		}
	}
	if zeros*3 >= len(head) { // about every other byte is NUL
		return "UTF-16 (no byte-order mark)"
	}
	return ""
}
