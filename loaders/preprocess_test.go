package loaders

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// tabTable reads an inline CSV for a test.
func tabTable(t *testing.T, name, text string, f CSVFormat) *Table {
	t.Helper()
	tab, err := ReadCSVFrom(strings.NewReader(text), name, f)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// tabSchema parses an inline JSON schema for a test.
func tabSchema(t *testing.T, js string) Schema {
	t.Helper()
	s, err := ParseSchema([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fitApply(t *testing.T, s Schema, train, test *Table) (*Preprocessor, *Dataset, Report, error) {
	t.Helper()
	p, err := NewPreprocessor(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Fit(train); err != nil {
		return p, nil, Report{}, err
	}
	d, rep, err := p.ApplyReport(test)
	return p, d, rep, err
}

func closeTo(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// rawAdultRows is the slow, independent reading of an Adult file: split
// lines on ", ", skip comment and empty lines and rows with "?".
func rawAdultRows(t *testing.T, path string) (rows [][]string, lines []int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "|") || strings.Contains(line, "?") {
			continue
		}
		rows = append(rows, strings.Split(line, ", "))
		lines = append(lines, i+1)
	}
	return rows, lines
}

// TestAdultSampleZScoresWithTrainStatsOnly checks the numeric and one-hot
// encoding of the 200-row Adult sample (fit) and the 100-row test sample
// (apply) against an independent computation from the raw lines, with
// E[x²]−E[x]² for the variance (the code uses two passes).
func TestAdultSampleZScoresWithTrainStatsOnly(t *testing.T) {
	s, err := LoadSchema(filepath.Join("testdata", "adult_sample.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	train, test, p, err := LoadCSV(CSVOptions{Schema: s, Dir: "testdata"})
	if err != nil {
		t.Fatal(err)
	}
	rawTrain, trainLines := rawAdultRows(t, filepath.Join("testdata", "adult_sample.data"))
	rawTest, testLines := rawAdultRows(t, filepath.Join("testdata", "adult_sample.test"))
	// 200 rows with 14 "?" rows; 100 rows with 10 "?" rows (testdata/README.md).
	if train.N() != 186 || test.N() != 90 || len(rawTrain) != 186 || len(rawTest) != 90 {
		t.Fatalf("records %d/%d (raw %d/%d), want 186/90", train.N(), test.N(), len(rawTrain), len(rawTest))
	}
	if !reflect.DeepEqual(train.Row, trainLines) || !reflect.DeepEqual(test.Row, testLines) {
		t.Errorf("row numbers do not match the file lines")
	}
	if test.Row[0] != 2 {
		t.Errorf("first test record at line %d, want 2 (after the |1x3 line)", test.Row[0])
	}
	if err := train.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := test.Validate(); err != nil {
		t.Fatal(err)
	}

	numericCol := map[string]int{"age": 0, "fnlwgt": 2, "education-num": 4, "capital-gain": 10, "capital-loss": 11, "hours-per-week": 12}
	for k, col := range s.Numeric {
		j := numericCol[col]
		var sum, sumSq float64
		for _, r := range rawTrain {
			v, _ := strconv.ParseFloat(r[j], 64)
			sum += v
			sumSq += v * v
		}
		n := float64(len(rawTrain))
		mean := sum / n
		std := math.Sqrt(sumSq/n - mean*mean)
		gotMean, gotStd, ok := p.Scaling(col)
		if !ok || !closeTo(gotMean, mean, 1e-12) || !closeTo(gotStd, std, 1e-8) {
			t.Errorf("%s: fitted %v±%v, want %v±%v", col, gotMean, gotStd, mean, std)
		}
		var trainZ, trainZ2, testZ, testRaw float64
		for i, r := range rawTrain {
			v, _ := strconv.ParseFloat(r[j], 64)
			z := train.X[i*train.Dim+k]
			if !closeTo(z, (v-mean)/std, 1e-8) {
				t.Fatalf("%s train record %d: %v, want %v", col, i, z, (v-mean)/std)
			}
			trainZ += z
			trainZ2 += z * z
		}
		for i, r := range rawTest {
			v, _ := strconv.ParseFloat(r[j], 64)
			z := test.X[i*test.Dim+k]
			if !closeTo(z, (v-mean)/std, 1e-8) {
				t.Fatalf("%s test record %d: %v, want %v (train statistics)", col, i, z, (v-mean)/std)
			}
			testZ += z
			testRaw += v
		}
		if math.Abs(trainZ/n) > 1e-12 || math.Abs(trainZ2/n-1) > 1e-9 {
			t.Errorf("%s: train z mean %v, second moment %v, want 0 and 1", col, trainZ/n, trainZ2/n)
		}
		testMean := testZ / float64(len(rawTest))
		if want := (testRaw/float64(len(rawTest)) - mean) / std; !closeTo(testMean, want, 1e-9) || testMean == 0 {
			t.Errorf("%s: test z mean %v, want %v (and not 0: the test split is not re-centred)", col, testMean, want)
		}
	}

	// One-hot blocks: categories fitted on the train sample (on_unseen
	// "zero"), so test cells outside them give all-zero blocks.
	catCol := map[string]int{"workclass": 1, "education": 3, "marital-status": 5, "occupation": 6, "relationship": 7, "race": 8, "native-country": 13}
	_, rep, err := p.ApplyReport(mustReadAdultSampleTest(t, s))
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range s.Categorical {
		j := catCol[col]
		fitted, _ := p.Categories(col)
		seen := map[string]bool{}
		for _, r := range rawTrain {
			seen[r[j]] = true
		}
		if len(fitted) != len(seen) {
			t.Errorf("%s: %d categories fitted, %d distinct in the train sample", col, len(fitted), len(seen))
		}
		unseen := 0
		for i, r := range rawTest {
			found := false
			for f, name := range test.FeatureNames {
				if !strings.HasPrefix(name, col+"=") {
					continue
				}
				want := 0.0
				if name == col+"="+r[j] {
					want, found = 1, true
				}
				if got := test.X[i*test.Dim+f]; got != want {
					t.Fatalf("test record %d feature %s = %v, want %v", i, name, got, want)
				}
			}
			if !found {
				unseen++
			}
		}
		if rep.Unseen[col] != unseen {
			t.Errorf("%s: %d unseen reported, %d counted", col, rep.Unseen[col], unseen)
		}
	}
	if rep.Unseen["native-country"] == 0 {
		t.Errorf("expected the test sample to have countries absent from the train sample")
	}
	// Labels: ">50K." in the test file is the positive class.
	for i, r := range rawTest {
		want := 0
		if strings.HasPrefix(r[14], ">50K") {
			want = 1
		}
		if test.Labels[i] != want {
			t.Fatalf("test record %d label %d, want %d (%s)", i, test.Labels[i], want, r[14])
		}
	}
	if !reflect.DeepEqual(train.GroupNames, []string{"Female", "Male"}) {
		t.Errorf("groups %q, want sorted [Female Male]", train.GroupNames)
	}
}

func mustReadAdultSampleTest(t *testing.T, s Schema) *Table {
	t.Helper()
	tab, err := ReadCSV(filepath.Join("testdata", "adult_sample.test"), s.Format)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestUnseenCategoryPolicies(t *testing.T) {
	train := tabTable(t, "train.csv", "color,size,y\nred,1,yes\nblue,2,no\nred,3,yes\n", CSVFormat{Header: true})
	test := tabTable(t, "test.csv", "color,size,y\nred,4,no\ngreen,5,yes\n", CSVFormat{Header: true})
	base := `{"label": {"column": "y", "positive": ["yes"], "negative": ["no"]}, "numeric": ["size"], "categorical": ["color"]`

	_, _, _, err := fitApply(t, tabSchema(t, base+`}`), train, test)
	if err == nil || !strings.Contains(err.Error(), `test.csv:3: column "color": category "green" was not seen when fitting`) {
		t.Errorf("on_unseen error: %v", err)
	}

	p, d, rep, err := fitApply(t, tabSchema(t, base+`, "on_unseen": "zero"}`), train, test)
	if err != nil {
		t.Fatal(err)
	}
	std := math.Sqrt(2.0 / 3) // sizes 1, 2, 3: mean 2, population variance 2/3
	want := []float64{2 / std, 0, 1, 3 / std, 0, 0}
	for i := range want {
		if !closeTo(d.X[i], want[i], 1e-12) {
			t.Fatalf("X = %v, want %v", d.X, want)
		}
	}
	if !reflect.DeepEqual(p.FeatureNames(), []string{"size", "color=blue", "color=red"}) {
		t.Errorf("features %q", p.FeatureNames())
	}
	if rep.Unseen["color"] != 1 || rep.Records != 2 {
		t.Errorf("report %+v", rep)
	}
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], `column "color": 1 cell with a category not seen when fitting`) {
		t.Errorf("notes %q", d.Notes)
	}
	if !reflect.DeepEqual(d.Labels, []int{0, 1}) || !reflect.DeepEqual(d.LabelNames, []string{"no", "yes"}) {
		t.Errorf("labels %v %q", d.Labels, d.LabelNames)
	}
}

func TestMissingValuePolicies(t *testing.T) {
	const text = "a,c,y\n1,x,1\n?,y,0\n3,?,1\n5,x,?\n"
	tab := tabTable(t, "m.csv", text, CSVFormat{Header: true})
	base := `{"label": {"column": "y", "positive": ["1"], "negative": ["0"]}, "numeric": ["a"], "categorical": ["c"], "on_missing": `
	cases := []struct {
		policy  string
		x       []float64 // features a, c=x, c=y (those fitted)
		dropped int
		imputed map[string]int
		err     string
	}{
		// Only line 2 is complete: a single value has std 0, scaled by 1,
		// and c has the one category x.
		{MissingDropRow, []float64{0, 1}, 3, map[string]int{}, ""},
		{MissingError, nil, 0, nil, `m.csv:3: column "a": missing value "?"; on_missing is "error"`},
		// Line 5 has no label and is dropped; a = 1, 3 → mean 2, std 1;
		// c = x, y → tie, the first category x.
		{MissingImputeMean, []float64{-1, 1, 0, 0, 0, 1, 1, 1, 0}, 1, map[string]int{"a": 1, "c": 1}, ""},
		// The mode of a = 1, 3 is the smaller, 1.
		{MissingImputeMode, []float64{-1, 1, 0, -1, 0, 1, 1, 1, 0}, 1, map[string]int{"a": 1, "c": 1}, ""},
	}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			_, d, rep, err := fitApply(t, tabSchema(t, base+strconv.Quote(c.policy)+`}`), tab, tab)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.X, c.x) {
				t.Errorf("X = %v, want %v", d.X, c.x)
			}
			if rep.DroppedMissing != c.dropped || !reflect.DeepEqual(rep.Imputed, c.imputed) {
				t.Errorf("report %+v, want dropped %d imputed %v", rep, c.dropped, c.imputed)
			}
		})
	}
}

func TestLabelKinds(t *testing.T) {
	tab := tabTable(t, "l.csv", "v,k\n27.576,a\n27.577,c\n-3,b\n", CSVFormat{Header: true})
	cases := []struct {
		name, schema string
		labels       []int
		err          string
	}{
		{"threshold is strict", `{"label": {"column": "v", "threshold": 27.576}, "drop": ["k"]}`, []int{0, 1, 0}, ""},
		{"classes", `{"label": {"column": "k", "classes": ["c", "b", "a"]}, "drop": ["v"]}`, []int{2, 0, 1}, ""},
		{"unknown class", `{"label": {"column": "k", "classes": ["a", "b"]}, "drop": ["v"]}`, nil, `l.csv:3: column "k": label "c" is not one of the classes "a", "b"`},
		{"neither positive nor negative", `{"label": {"column": "k", "positive": ["a"], "negative": ["b"]}, "drop": ["v"]}`, nil, `l.csv:3: column "k": label "c" is neither positive ("a") nor negative ("b")`},
		{"rest negative", `{"label": {"column": "k", "positive": ["a"]}, "drop": ["v"]}`, []int{1, 0, 0}, ""},
		{"recoded label", `{"label": {"column": "k", "positive": ["a"], "negative": ["b"]}, "recode": {"k": {"c": "a"}}, "drop": ["v"]}`, []int{1, 1, 0}, ""},
		{"threshold on text", `{"label": {"column": "k", "threshold": 1}, "drop": ["v"]}`, nil, `l.csv:2: column "k": expected a finite number to compare with the threshold 1, got "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, d, _, err := fitApply(t, tabSchema(t, c.schema), tab, tab)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Labels, c.labels) {
				t.Errorf("labels %v, want %v", d.Labels, c.labels)
			}
		})
	}
}

func TestSensitiveGroups(t *testing.T) {
	tab := tabTable(t, "g.csv", "sex,race,age,y\n1,White,9,1\n2,Black,12,0\n1,Black,30,1\n2,White,15,0\n", CSVFormat{Header: true})
	cases := []struct {
		name, schema string
		groups       []int
		names        []string
		err          string
	}{
		{"two columns combine, sorted names",
			`{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["sex", "race"], "map": {"sex": {"1": "Male", "2": "Female"}}}, "drop": ["age"]}`,
			[]int{3, 0, 2, 1}, []string{"Female|Black", "Female|White", "Male|Black", "Male|White"}, ""},
		{"declared order",
			`{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["sex"], "map": {"sex": {"1": "Male", "2": "Female"}}, "groups": ["Male", "Female"]}, "drop": ["age", "race"]}`,
			[]int{0, 1, 0, 1}, []string{"Male", "Female"}, ""},
		{"age buckets",
			`{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["age"], "buckets": {"age": [10, 15]}, "groups": ["<=10", "(10,15]", ">15"]}, "drop": ["sex", "race"]}`,
			[]int{0, 1, 2, 1}, []string{"<=10", "(10,15]", ">15"}, ""},
		{"no sensitive column: one group",
			`{"label": {"column": "y", "positive": ["1"]}, "drop": ["sex", "race", "age"]}`,
			[]int{0, 0, 0, 0}, []string{"all"}, ""},
		{"unmapped value",
			`{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["sex"], "map": {"sex": {"1": "Male"}}}, "drop": ["age", "race"]}`,
			nil, nil, `g.csv:3: column "sex": value "2" has no entry in sensitive.map; expected one of "1"`},
		{"undeclared group",
			`{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["race"], "groups": ["White"]}, "drop": ["age", "sex"]}`,
			nil, nil, `g.csv:3: column "race": group "Black" is not in sensitive.groups "White"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, d, _, err := fitApply(t, tabSchema(t, c.schema), tab, tab)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Groups, c.groups) || !reflect.DeepEqual(d.GroupNames, c.names) {
				t.Errorf("groups %v %q, want %v %q", d.Groups, d.GroupNames, c.groups, c.names)
			}
		})
	}
}

func TestSensitiveAsFeatureAndRecode(t *testing.T) {
	tab := tabTable(t, "s.csv", "SEX,EDUCATION,y\n1,0,1\n2,5,0\n1,2,1\n", CSVFormat{Header: true})
	s := tabSchema(t, `{"label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["SEX"]},
		"sensitive_as_feature": true, "categorical": ["EDUCATION"], "recode": {"EDUCATION": {"0": "4", "5": "4"}}}`)
	p, d, _, err := fitApply(t, s, tab, tab)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"EDUCATION=2", "EDUCATION=4", "SEX=1", "SEX=2"}
	if !reflect.DeepEqual(p.FeatureNames(), wantNames) {
		t.Errorf("features %q, want %q", p.FeatureNames(), wantNames)
	}
	wantX := []float64{0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0}
	if !reflect.DeepEqual(d.X, wantX) {
		t.Errorf("X = %v, want %v", d.X, wantX)
	}
	if !reflect.DeepEqual(d.Groups, []int{0, 1, 0}) {
		t.Errorf("groups %v", d.Groups)
	}
}

func TestRegressionTarget(t *testing.T) {
	tab := tabTable(t, "r.csv", "x,t,s\n1,2.5,a\n2,-1e-005,b\n", CSVFormat{Header: true})
	_, d, _, err := fitApply(t, tabSchema(t, `{"target": "t", "numeric": ["x"], "sensitive": {"columns": ["s"]}}`), tab, tab)
	if err != nil {
		t.Fatal(err)
	}
	if d.Labels != nil || d.LabelNames != nil || !reflect.DeepEqual(d.Targets, []float64{2.5, -1e-5}) {
		t.Errorf("labels %v, targets %v", d.Labels, d.Targets)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	// A label can be derived from the target column too.
	_, d, _, err = fitApply(t, tabSchema(t, `{"target": "t", "label": {"column": "t", "threshold": 0}, "numeric": ["x"], "drop": ["s"]}`), tab, tab)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Labels, []int{1, 0}) || !reflect.DeepEqual(d.Targets, []float64{2.5, -1e-5}) {
		t.Errorf("labels %v, targets %v", d.Labels, d.Targets)
	}
}

func TestSchemaMustAccountForEveryColumn(t *testing.T) {
	tab := tabTable(t, "c.csv", "a,b,y\n1,2,1\n", CSVFormat{Header: true})
	cases := []struct{ schema, want string }{
		{`{"label": {"column": "y", "positive": ["1"]}, "numeric": ["a"]}`, `c.csv: column "b": column is not in the schema; list it under numeric, categorical or drop`},
		{`{"label": {"column": "y", "positive": ["1"]}, "numeric": ["a", "b", "z"]}`, `c.csv: column "z": the schema's numeric column is not in the file; the file's columns are "a", "b", "y"`},
		{`{"label": {"column": "w", "positive": ["1"]}, "numeric": ["a", "b"]}`, `column "w": the schema's label column is not in the file`},
		{`{"label": {"column": "y", "positive": ["1"]}, "numeric": ["a", "b"], "drop": ["q"]}`, `column "q": the schema's dropped column is not in the file`},
		{`{"label": {"column": "y", "positive": ["1"]}, "categorical": ["a"], "numeric": ["b"], "target": "a2"}`, `column "a2": the schema's target column`},
	}
	for _, c := range cases {
		p, err := NewPreprocessor(tabSchema(t, c.schema))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Fit(tab); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func TestNumericCellErrorsNameLineAndColumn(t *testing.T) {
	tab := tabTable(t, "n.csv", "a,y\n1,1\n2,1\nx2,0\n", CSVFormat{Header: true})
	p, err := NewPreprocessor(tabSchema(t, `{"label": {"column": "y", "positive": ["1"]}, "numeric": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Fit(tab)
	var de *DataError
	if !errors.As(err, &de) || de.File != "n.csv" || de.Line != 4 || de.Field != "a" ||
		de.Error() != `n.csv:4: column "a": expected a finite number, got "x2"` {
		t.Errorf("got %v", err)
	}
}

func TestApplyBeforeFitAndEmptyFit(t *testing.T) {
	p, err := NewPreprocessor(tabSchema(t, `{"label": {"column": "y", "positive": ["1"]}, "numeric": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tab := tabTable(t, "e.csv", "a,y\n?,1\n", CSVFormat{Header: true})
	if _, err := p.Apply(tab); err == nil || !strings.Contains(err.Error(), "not fitted") {
		t.Errorf("apply before fit: %v", err)
	}
	if _, err := p.MarshalJSON(); err == nil {
		t.Errorf("marshal before fit: no error")
	}
	if err := p.Fit(tab); err == nil || !strings.Contains(err.Error(), "e.csv: no training records left") {
		t.Errorf("fit on nothing: %v", err)
	}
}

func TestPreprocessorJSONRoundTrip(t *testing.T) {
	s, err := LoadSchema(filepath.Join("testdata", "adult_sample.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, test, p, err := LoadCSV(CSVOptions{Schema: s, Dir: "testdata"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Preprocessor
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, err := back.Apply(mustReadAdultSampleTest(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.X, test.X) || !reflect.DeepEqual(again.Labels, test.Labels) ||
		!reflect.DeepEqual(again.Groups, test.Groups) || !reflect.DeepEqual(again.FeatureNames, test.FeatureNames) {
		t.Errorf("the restored preprocessor encodes differently")
	}
	data2, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(data2) {
		t.Errorf("marshal → unmarshal → marshal changed the JSON")
	}

	tamper := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return out
	}
	bad := []struct {
		name string
		data []byte
		want string
	}{
		{"version", tamper(func(m map[string]any) { m["version"] = 2 }), "version 2, expected 1"},
		{"unknown key", tamper(func(m map[string]any) { m["extra"] = 1 }), `unknown field "extra"`},
		{"negative std", tamper(func(m map[string]any) {
			m["numeric"].([]any)[0].(map[string]any)["std"] = -1
		}), `numeric "age" has std -1`},
		{"features", tamper(func(m map[string]any) { m["features"] = []string{"x"} }), "feature names do not match"},
		{"missing column", tamper(func(m map[string]any) { m["numeric"] = m["numeric"].([]any)[1:] }), "5 numeric and 7 categorical columns fitted, the schema has 6 and 7"},
		{"no groups", tamper(func(m map[string]any) { m["groups"] = []string{} }), "no groups"},
	}
	for _, c := range bad {
		var p2 Preprocessor
		if err := json.Unmarshal(c.data, &p2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestLoadCSVRandomSplit(t *testing.T) {
	s, err := LoadSchema(filepath.Join("testdata", "adult_sample.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.TestFiles = nil
	load := func(seed uint64, stratify bool) (*Dataset, *Dataset) {
		tr, te, _, err := LoadCSV(CSVOptions{Schema: s, Dir: "testdata",
			Split: SplitOptions{Rand: rand.New(rand.NewPCG(seed, 1)), Stratify: stratify}})
		if err != nil {
			t.Fatal(err)
		}
		return tr, te
	}
	tr, te := load(1, false)
	// 186 complete rows; floor(0.75·186) = 139 train.
	if tr.N() != 139 || te.N() != 47 {
		t.Fatalf("split %d/%d, want 139/47", tr.N(), te.N())
	}
	if tr.Name != "adult-sample/train" || te.Name != "adult-sample/test" ||
		!strings.HasPrefix(tr.Notes[0], "train split: 139 of 186 records") || !strings.Contains(tr.Notes[1], "dropped 14 rows") {
		t.Errorf("names %q %q, notes %q", tr.Name, te.Name, tr.Notes)
	}
	seen := map[int]bool{}
	for _, r := range append(append([]int(nil), tr.Row...), te.Row...) {
		if seen[r] {
			t.Fatalf("line %d in both splits", r)
		}
		seen[r] = true
	}
	tr2, _ := load(1, false)
	tr3, _ := load(2, false)
	if !reflect.DeepEqual(tr.Row, tr2.Row) || reflect.DeepEqual(tr.Row, tr3.Row) {
		t.Errorf("the split is not a function of the seed")
	}
	// Train z-scores have mean 0 over the training split only.
	var m float64
	for i := 0; i < tr.N(); i++ {
		m += tr.X[i*tr.Dim]
	}
	if math.Abs(m/float64(tr.N())) > 1e-12 {
		t.Errorf("train age mean %v, want 0", m/float64(tr.N()))
	}

	str, ste := load(3, true)
	gl, tl := str.GroupLabelCounts(), ste.GroupLabelCounts()
	for g := range gl {
		for l := range gl[g] {
			n := gl[g][l] + tl[g][l]
			lo := 139 * n / 186 // floor of the cell's share of the 139 training records
			if gl[g][l] < lo || gl[g][l] > lo+1 {
				t.Errorf("stratum %d×%d: %d of %d in train, want %d or %d", g, l, gl[g][l], n, lo, lo+1)
			}
		}
	}
	if str.N() != 139 {
		t.Errorf("stratified train %d, want 139", str.N())
	}

	if _, _, _, err := LoadCSV(CSVOptions{Schema: s, Dir: "testdata"}); err == nil || !strings.Contains(err.Error(), "Rand is nil") {
		t.Errorf("nil rng: %v", err)
	}
	if _, _, _, err := LoadCSV(CSVOptions{Schema: s, Dir: "testdata", Split: SplitOptions{TrainFrac: 1.5, Rand: rand.New(rand.NewPCG(1, 1))}}); err == nil || !strings.Contains(err.Error(), "train fraction 1.5") {
		t.Errorf("bad fraction: %v", err)
	}
	s.Files = nil
	if _, _, _, err := LoadCSV(CSVOptions{Schema: s}); err == nil || !strings.Contains(err.Error(), "no data files") {
		t.Errorf("no files: %v", err)
	}
}

func TestLoadCSVQuirksFile(t *testing.T) {
	s, err := LoadSchema(filepath.Join("testdata", "quirks.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, te, p, err := LoadCSV(CSVOptions{Schema: s, Dir: "testdata", TestFiles: []string{"quirks.csv"}})
	if err != nil {
		t.Fatal(err)
	}
	if tr.N() != 3 || te.N() != 3 {
		t.Fatalf("records %d/%d, want 3/3", tr.N(), te.N())
	}
	if !reflect.DeepEqual(p.FeatureNames(), []string{"score", "name=Doe", "name=Smith, Jane"}) {
		t.Errorf("features %q", p.FeatureNames())
	}
	// score 2.00E+05 and 1e-005, NA imputed with the mode (the smaller of a
	// tie, 1e-005); name "?" imputed with the first category of a tie, Doe.
	mean := (200000 + 1e-5) / 2
	std := (200000 - 1e-5) / 2
	want := []float64{(200000 - mean) / std, 0, 1, (1e-5 - mean) / std, 1, 0, (1e-5 - mean) / std, 1, 0}
	for i := range want {
		if !closeTo(te.X[i], want[i], 1e-12) {
			t.Fatalf("X = %v, want %v", te.X, want)
		}
	}
	if !reflect.DeepEqual(te.Labels, []int{0, 1, 0}) || !reflect.DeepEqual(te.Row, []int{2, 3, 5}) {
		t.Errorf("labels %v rows %v", te.Labels, te.Row)
	}
	if !reflect.DeepEqual(te.Notes, []string{"test split: the given test files",
		`column "name": imputed 1 missing cell`, `column "score": imputed 1 missing cell`}) {
		t.Errorf("notes %q", te.Notes)
	}
	if !reflect.DeepEqual(te.Sources, []string{filepath.Join("testdata", "quirks.csv")}) {
		t.Errorf("sources %q", te.Sources)
	}
}

func TestEncodingSizeGuard(t *testing.T) {
	defer func(old int) { maxFeatureValues = old }(maxFeatureValues)
	maxFeatureValues = 5
	tab := tabTable(t, "id.csv", "id,y\n1,1\n2,0\n3,1\n", CSVFormat{Header: true})
	_, _, _, err := fitApply(t, tabSchema(t, `{"label": {"column": "y", "positive": ["1"]}, "categorical": ["id"]}`), tab, tab)
	if err == nil || !strings.Contains(err.Error(), `id.csv: column "id": 3 records × 3 features is too large to encode; this column alone has 3 categories`) {
		t.Errorf("got %v", err)
	}
}

// TestLoadCSVGroupOnlyInTestFile: group names (not statistics) come from
// both files, so a group absent from the training file still gets an id.
func TestLoadCSVGroupOnlyInTestFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tr.csv"), []byte("x,s,y\n1,a,1\n2,a,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "te.csv"), []byte("x,s,y\n3,b,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := tabSchema(t, `{"files": ["tr.csv"], "test_files": ["te.csv"], "format": {"header": true},
		"label": {"column": "y", "positive": ["1"]}, "numeric": ["x"], "sensitive": {"columns": ["s"]}}`)
	tr, te, _, err := LoadCSV(CSVOptions{Schema: s, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr.GroupNames, []string{"a", "b"}) || !reflect.DeepEqual(te.Groups, []int{1}) ||
		!reflect.DeepEqual(tr.GroupCounts(), []int{2, 0}) {
		t.Errorf("groups %q train %v test %v", tr.GroupNames, tr.GroupCounts(), te.Groups)
	}
	// The test value is z-scored with the training mean 1.5 and std 0.5.
	if te.X[0] != 3 {
		t.Errorf("test x = %v, want (3-1.5)/0.5 = 3", te.X[0])
	}
}

// TestExtremeValues: cells near ±1.8e308 are legal
// float64 and must standardise to finite features, not overflow into an
// internal error far from the file.
func TestExtremeValues(t *testing.T) {
	csv := "a,s,y\n1,x,1\n1e308,y,0\n-1e308,x,1\n2,y,0\n3,x,1\n4,y,0\n5,x,1\n6,y,0\n"
	s, err := ParseSchema([]byte(`{"format":{"header":true},"label":{"column":"y","positive":["1"]},"sensitive":{"columns":["s"]},"numeric":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"big.csv": &fstest.MapFile{Data: []byte(csv)}}
	train, test, p, err := LoadCSV(CSVOptions{Schema: s, Files: []string{"big.csv"}, FS: fsys, Split: SplitOptions{Rand: rand.New(rand.NewPCG(1, 2))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*Dataset{train, test} {
		for i, v := range d.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: feature %d is %v", d.Name, i, v)
			}
		}
	}
	if _, err := json.Marshal(p); err != nil {
		t.Errorf("the fitted preprocessing does not serialise: %v", err)
	}
}

// TestMinMaxScale: "scale": "minmax" maps the training minimum to 0 and
// maximum to 1 (test rows are encoded with the training statistics and may
// leave [0, 1]; a constant column scales by 1), survives the JSON round
// trip, and an unknown scale is refused.
func TestMinMaxScale(t *testing.T) {
	const schema = `{"label": {"column": "y", "positive": ["1"]}, "numeric": ["a", "b"], "sensitive": {"columns": ["s"]}, "scale": "minmax"}`
	train := tabTable(t, "train.csv", "a,b,s,y\n2,7,m,1\n10,7,f,0\n4,7,m,0\n", CSVFormat{Header: true})
	test := tabTable(t, "test.csv", "a,b,s,y\n6,7,f,1\n12,9,m,0\n-2,7,f,1\n", CSVFormat{Header: true})
	p, trainD, _, err := fitApply(t, tabSchema(t, schema), train, train)
	if err != nil {
		t.Fatal(err)
	}
	// a: min 2, max 10 → (v − 2)/8; b is constant 7 → v − 7.
	if want := []float64{0, 0, 1, 0, 0.25, 0}; !reflect.DeepEqual(trainD.X, want) {
		t.Errorf("train features %v, want %v", trainD.X, want)
	}
	testD, err := p.Apply(test)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.5, 0, 1.25, 2, -0.5, 0}; !reflect.DeepEqual(testD.X, want) {
		t.Errorf("test features %v, want %v (training min and max)", testD.X, want)
	}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Preprocessor
	if err := json.Unmarshal(js, &q); err != nil {
		t.Fatal(err)
	}
	again, err := q.Apply(test)
	if err != nil || !reflect.DeepEqual(again.X, testD.X) {
		t.Errorf("after the JSON round trip: %v, %v; want %v", again.X, err, testD.X)
	}
	// A fitted state whose scaling disagrees with its schema is refused.
	bad := strings.Replace(string(js), `"scale":"minmax",`, "", 1)
	if err := json.Unmarshal([]byte(bad), &q); err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("fitted state without its min-max scaling: error %v", err)
	}
	if _, err := ParseSchema([]byte(strings.Replace(schema, "minmax", "robust", 1))); err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("unknown scale: error %v", err)
	}
	// The default is still the z-score.
	_, z, _, err := fitApply(t, tabSchema(t, strings.Replace(schema, `, "scale": "minmax"`, "", 1)), train, train)
	if err != nil {
		t.Fatal(err)
	}
	if m := (z.X[0] + z.X[2] + z.X[4]) / 3; math.Abs(m) > 1e-12 {
		t.Errorf("z-scored train mean %v, want 0", m)
	}
}
