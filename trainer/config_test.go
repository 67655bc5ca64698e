package trainer

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFederationValidate: SteFFLe's settings are checked only for --algo
// steffle, with errors that name the flag and what was expected.
func TestFederationValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*FederationConfig)
		want string // "" = valid
	}{
		{"defaults", func(*FederationConfig) {}, ""},
		{"sensitive silo", func(f *FederationConfig) { f.Mode = FederationSensitiveSilo }, ""},
		{"mapping", func(f *FederationConfig) { f.Mode, f.MappingFile = FederationMapping, "m.csv" }, ""},
		{"no silos", func(f *FederationConfig) { f.Silos = 0 }, "Federation.Silos must be ≥ 1 (got 0)"},
		{"h", func(f *FederationConfig) { f.Heterogeneity = 1.5 }, "Federation.Heterogeneity must be in [0,1] (got 1.5)"},
		{"mode", func(f *FederationConfig) { f.Mode = "vertical" }, `Federation.Mode must be horizontal, sensitive-silo or mapping (got "vertical")`},
		{"mapping without file", func(f *FederationConfig) { f.Mode = FederationMapping }, "Federation.Mode mapping needs Federation.MappingFile FILE.csv"},
		{"file without mapping", func(f *FederationConfig) { f.MappingFile = "m.csv" }, "Federation.MappingFile is only read with Federation.Mode mapping"},
	} {
		c := Defaults()
		c.Algo = "steffle"
		c.Optimizer = "sgd"
		tc.edit(&c.Federation)
		err := c.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		c.Algo = "fermi" // other algorithms ignore the federation
		if err := c.Validate(); err != nil {
			t.Errorf("%s with --algo fermi: %v", tc.name, err)
		}
	}
}

// TestFederationJSON: a zero federation (what sweeps of other algorithms
// use) is left out of the config JSON, so their sweep.json is unchanged;
// SteFFLe's is written under "federation".
func TestFederationJSON(t *testing.T) {
	c := Defaults()
	c.Federation = FederationConfig{}
	raw, _ := json.Marshal(c)
	if strings.Contains(string(raw), "federation") {
		t.Errorf("zero federation written: %s", raw)
	}
	c.Federation = DefaultFederation()
	raw, _ = json.Marshal(c)
	if !strings.Contains(string(raw), `"federation":{"silos":3,"heterogeneity":0,"silo_attribute":"age","mode":"horizontal","mapping_file":""}`) {
		t.Errorf("federation JSON: %s", raw)
	}
}
