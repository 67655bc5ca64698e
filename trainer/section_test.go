package trainer

import (
	"encoding/json"
	"strings"
	"testing"
)

// testSection is a section registered by this test only.
type testSection struct {
	A     int       `json:"a"`
	B     string    `json:"b,omitempty"`
	Inner []float64 `json:"inner"`
}

func init() { RegisterSection[testSection]("test_section") }

// TestSectionRoundTrip: a section is written under its key, left out when
// zero, read back (merging into the settings held, as Config's own
// fields do), and refused when it carries a key its type lacks.
func TestSectionRoundTrip(t *testing.T) {
	c := Defaults()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "test_section") {
		t.Errorf("a zero section is written: %s", raw)
	}
	c = WithSection(c, "test_section", testSection{A: 3, Inner: []float64{1, 2}})
	raw, err = json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if got := string(top["test_section"]); got != `{"a":3,"inner":[1,2]}` {
		t.Errorf("section JSON %s", got)
	}
	if _, ok := top["sections"]; ok {
		t.Errorf("the section map itself is written: %s", raw)
	}

	back := Defaults()
	if err := decodeConfigStrict(raw, &back); err != nil {
		t.Fatal(err)
	}
	if s := Section[testSection](back, "test_section"); s.A != 3 || len(s.Inner) != 2 || s.Inner[1] != 2 {
		t.Errorf("read back %+v", s)
	}
	raw2, _ := json.Marshal(back)
	if string(raw2) != string(raw) {
		t.Errorf("round trip differs:\n%s\n%s", raw, raw2)
	}

	// Keys left out keep the values held.
	if err := decodeConfigStrict([]byte(`{"test_section":{"b":"x"}}`), &back); err != nil {
		t.Fatal(err)
	}
	if s := Section[testSection](back, "test_section"); s.A != 3 || s.B != "x" {
		t.Errorf("merged %+v", s)
	}
	// The Go field name a report wrote before snake_case keys is refused.
	for _, bad := range []string{`{"TestSection":{"A":5}}`, `{"test_section":{"c":1}}`, `{"test_sectio":{"a":1}}`, `{"test_section":{"a":"x"}}`} {
		var c Config
		if err := decodeConfigStrict([]byte(bad), &c); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestWithSectionCopies: WithSection and WithoutSections leave the Config
// they were given, and every copy of it, as they were.
func TestWithSectionCopies(t *testing.T) {
	a := WithSection(Config{}, "test_section", testSection{A: 1})
	b := a
	c := WithSection(b, "test_section", testSection{A: 2})
	if Section[testSection](a, "test_section").A != 1 || Section[testSection](b, "test_section").A != 1 ||
		Section[testSection](c, "test_section").A != 2 {
		t.Error("WithSection changed a copy")
	}
	d := WithoutSections(c)
	if Section[testSection](c, "test_section").A != 2 || Section[testSection](d, "test_section").A != 0 {
		t.Error("WithoutSections")
	}
	if e := WithSection(c, "test_section", testSection{}); Section[testSection](c, "test_section").A != 2 ||
		Section[testSection](e, "test_section").A != 0 {
		t.Error("a zero section is not removed, or its removal reaches the copy")
	}
}

// TestConfigUnmarshalLenient: plain json.Unmarshal of a Config (a report
// read as a Report) reads sections as encoding/json reads a struct:
// without regard to case, ignoring unknown keys, as it read Config when the
// sections were its fields.
func TestConfigUnmarshalLenient(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"algorithm":"x","unknown":1,"Test_Section":{"a":4,"zz":1}}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.Algo != "x" || Section[testSection](c, "test_section").A != 4 {
		t.Errorf("read %q %+v", c.Algo, Section[testSection](c, "test_section"))
	}
	if err := decodeConfigStrict([]byte(`{"algorithm":"x","unknown":1}`), &c); err == nil {
		t.Error("decodeConfigStrict accepts an unknown key")
	}
}

// TestConfigDiffSections: a resumed run refuses a checkpoint whose
// sections differ from the configuration now (and reflection over Config
// does not reach into the unexported section map).
func TestConfigDiffSections(t *testing.T) {
	a := WithSection(Defaults(), "test_section", testSection{A: 1})
	if errs := configDiff(a, a, "d"); len(errs) != 0 {
		t.Errorf("equal configs differ: %v", errs)
	}
	for _, b := range []Config{WithSection(a, "test_section", testSection{A: 2}), WithoutSections(a)} {
		errs := configDiff(a, b, "d")
		if len(errs) != 1 || errs[0].Field != "test_section" {
			t.Errorf("differing sections: %v", errs)
		}
		if errs := configDiff(b, a, "d"); len(errs) != 1 {
			t.Errorf("differing sections, other way: %v", errs)
		}
	}
}
