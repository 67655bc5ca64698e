package loaders_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing/fstest"

	"github.com/fairdp/fairdp/loaders"
)

// ExampleLoadCSV loads a CSV through a JSON schema: the preprocessing is
// fitted on the training file and applied to the test file.
func ExampleLoadCSV() {
	schema, err := loaders.LoadSchema("testdata/adult_sample.schema.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	train, test, prep, err := loaders.LoadCSV(loaders.CSVOptions{Schema: schema, Dir: "testdata"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(train.N(), "training and", test.N(), "test records with", prep.Dim(), "features")
	fmt.Println(prep.FeatureNames()[:7])
	fmt.Print(loaders.Describe(test))
	// Output:
	// 186 training and 90 test records with 66 features
	// [age fnlwgt education-num capital-gain capital-loss hours-per-week workclass=Federal-gov]
	// adult-sample/test: 90 records, 66 features (tabular)
	// sources: testdata/adult_sample.test
	//    group  records   share  <=50K  P(<=50K)  >50K  P(>50K)
	//   Female       24  0.2667     22    0.9167     2   0.0833
	//     Male       66  0.7333     47    0.7121    19   0.2879
	//      all       90  1.0000     69    0.7667    21   0.2333
	// note: test split: the given test files
	// note: dropped 10 rows with a missing cell from testdata/adult_sample.test
	// note: column "education": 3 cells with a category not seen when fitting (encoded as all-zero)
	// note: column "native-country": 3 cells with a category not seen when fitting (encoded as all-zero)
	// note: column "occupation": 3 cells with a category not seen when fitting (encoded as all-zero)
}

// ExampleLoadBuiltin loads Adult with DP-FERMI's preprocessing and 75/25
// split; without a data directory it reads the copy embedded in the binary.
func ExampleLoadBuiltin() {
	train, test, prep, err := loaders.LoadBuiltin("adult", "", loaders.SplitOptions{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		fmt.Println(err)
		return
	}
	groups := train.GroupCounts()
	for g, n := range test.GroupCounts() {
		groups[g] += n
	}
	fmt.Println(train.N(), test.N(), prep.Dim(), train.GroupNames, groups)
	// Output: 33916 11306 102 [Male Female] [30527 14695]
}

// ExampleReadCSVFrom shows the raw reading step on its own.
func ExampleReadCSVFrom() {
	text := "\ufeffname,score\r\n\"Smith, Jane\",2.00E+05\r\nDoe,?\r\n\r\n"
	tab, err := loaders.ReadCSVFrom(strings.NewReader(text), "scores.csv", loaders.CSVFormat{Header: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %q lines %v\n", tab.Columns, tab.Cells, tab.Line)
	_, err = loaders.ReadCSVFrom(strings.NewReader("name,score\nDoe\n"), "scores.csv", loaders.CSVFormat{Header: true})
	fmt.Println(err)
	// Output:
	// ["name" "score"] [["Smith, Jane" "2.00E+05"] ["Doe" "?"]] lines [2 3]
	// scores.csv:2: expected 2 fields (as in the header), got 1
}

// A schema for a file from the wild: an unnamed index column, a repeated
// header name, columns without a role and a row filter.
func ExampleSchema_wild() {
	csv := ",age,income,income,country,sex,default\n" +
		"0,25,10,11,US,1,0\n1,40,20,19,FR,2,1\n2,33,15,14,US,2,1\n3,51,30,33,US,1,0\n" +
		"4,29,12,12,US,1,1\n5,45,25,26,US,2,0\n6,38,18,20,DE,1,0\n7,60,40,39,US,2,1\n"
	s, err := loaders.ParseSchema([]byte(`{
	  "format": {"header": true},
	  "rename": {"#4": "income_2"},
	  "label": {"column": "default", "positive": ["1.0"]},
	  "sensitive": {"columns": ["sex"], "map": {"sex": {"1": "Male", "2": "Female"}}},
	  "numeric": ["age", "income", "income_2"],
	  "filter": {"country": ["US"]},
	  "drop": [""],
	  "drop_rest": true
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fsys := fstest.MapFS{"wild.csv": &fstest.MapFile{Data: []byte(csv)}}
	train, test, _, err := loaders.LoadCSV(loaders.CSVOptions{Schema: s, Files: []string{"wild.csv"}, FS: fsys,
		Split: loaders.SplitOptions{Rand: rand.New(rand.NewPCG(1, 1))}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(train.N()+test.N(), "US records;", "features", train.FeatureNames, "groups", train.GroupNames)
	// Output: 6 US records; features [age income income_2] groups [Female Male]
}
