package federated

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// trainSteffle runs --algo steffle in process with set and returns the
// report, the model's parameters and the algorithm.
func trainSteffle(t *testing.T, cfg trainer.Config, set Settings) (*trainer.Report, []float64, *Steffle[float64]) {
	t.Helper()
	job := testJob(t, cfg, synthetic(600, 2))
	alg, err := New[float64](job, set)
	if err != nil {
		t.Fatal(err)
	}
	rep, m, err := trainer.Run(context.Background(), job, trainer.Algorithm[float64](alg))
	if err != nil {
		t.Fatal(err)
	}
	return rep, flatParams(m), alg
}

func flatParams(m trainer.Model[float64]) []float64 {
	var out []float64
	for _, p := range m.Params() {
		out = append(out, p.Value...)
	}
	return out
}

// TestHybridEqualsHorizontal: the hybrid modes compute the same function as
// the horizontal federation, only on other machines. With one silo holding
// every sensitive attribute, each feature silo's records form one lane that
// the sensitive silo runs with the same batches and noise streams as the
// horizontal silo would (same seed), so the models are bit-identical; so is
// a mapping file in which every record's features and sensitive attribute
// are on the same silo (the SteFFLe paper's hybrid modes).
func TestHybridEqualsHorizontal(t *testing.T) {
	cfg := testConfig(21)
	horizontal := Settings{Silos: 3, Heterogeneity: 0.75, SiloAttribute: "age"}
	repH, thetaH, algH := trainSteffle(t, cfg, horizontal)

	hybrid := horizontal
	hybrid.Mode = trainer.FederationSensitiveSilo
	repS, thetaS, algS := trainSteffle(t, cfg, hybrid)
	if !equalFloats(thetaH, thetaS) || !equalFloats(algH.server.Reg.W, algS.server.Reg.W) {
		t.Fatalf("sensitive-silo mode differs from horizontal:\n%v\n%v", thetaH, thetaS)
	}
	if *repH.Privacy.Epsilon != *repS.Privacy.Epsilon || repH.Test.Error != repS.Test.Error {
		t.Errorf("ε %v vs %v, test error %v vs %v", *repH.Privacy.Epsilon, *repS.Privacy.Epsilon, repH.Test.Error, repS.Test.Error)
	}
	// Accounting per silo: the feature silos release nothing about s; the
	// sensitive silo's lanes hold disjoint records, so its ε is their
	// largest, not their sum.
	per := algS.SiloPrivacy()
	if len(per) != 4 {
		t.Fatalf("%d silos, want 3 feature silos + 1 sensitive silo", len(per))
	}
	for _, p := range per[:3] {
		if p.Epsilon != nil || p.Records != 0 || p.FeatureRecords == 0 {
			t.Errorf("feature silo %d: %+v, want no ε, no sensitive records", p.Silo, p)
		}
	}
	worst := 0.0
	for _, s := range algS.Silos {
		e := s.SpentEpsilon()
		worst = max(worst, e)
	}
	if s := per[3]; s.Epsilon == nil || *s.Epsilon != worst || s.Records != 600 || !slices.Equal(s.Lanes, []int{0, 1, 2}) {
		t.Errorf("sensitive silo: %+v, want ε = %v (largest lane), 600 records, lanes 0..2", s, worst)
	}
	if worst > cfg.Privacy.Epsilon+1e-9 {
		t.Errorf("sensitive silo spent ε = %v above the budget %v", worst, cfg.Privacy.Epsilon)
	}
	if !strings.Contains(repS.Privacy.Note, "silo 3: ε = ") || !strings.Contains(repS.Privacy.Note, "silo 0: 200 feature records, no sensitive release") {
		t.Errorf("receipt note lacks the per-silo lines: %s", repS.Privacy.Note)
	}

	// The same horizontal split given as a mapping file.
	path := filepath.Join(t.TempDir(), "map.csv")
	m := algH.Mapping
	if err := WriteMapping(path, m); err != nil {
		t.Fatal(err)
	}
	mapped := Settings{Silos: 3, Mode: trainer.FederationMapping, MappingFile: path}
	_, thetaM, _ := trainSteffle(t, cfg, mapped)
	if !equalFloats(thetaH, thetaM) {
		t.Fatalf("mapping file of the horizontal split differs from horizontal:\n%v\n%v", thetaH, thetaM)
	}
}

// TestHybridScopeAllRefused: a hybrid federation ships features and labels
// between silos, which --scope all protects: refused with a clear error.
func TestHybridScopeAllRefused(t *testing.T) {
	cfg := testConfig(3)
	cfg.Fair.Scope = "all"
	job := testJob(t, cfg, synthetic(300, 1))
	_, err := New[float64](job, Settings{Silos: 2, SiloAttribute: "age", Mode: trainer.FederationSensitiveSilo})
	if err == nil || !strings.Contains(err.Error(), "use Fair.Scope sensitive") {
		t.Fatalf("got %v, want a refusal naming Fair.Scope sensitive", err)
	}
}

// TestGeneralMapping: records split over silos in every combination train,
// with one lane per (feature silo, sensitive silo) pair and every silo's ε
// within the budget.
func TestGeneralMapping(t *testing.T) {
	cfg := testConfig(8)
	n := 600
	m := Mapping{Silos: 3, NonSensitive: make([]int, n), Sensitive: make([]int, n)}
	for i := range n {
		m.NonSensitive[i] = i % 2 // features on silo 0 or 1
		m.Sensitive[i] = i / 200  // sensitive attributes on silo 0, 1 or 2
	}
	path := filepath.Join(t.TempDir(), "map.csv")
	if err := WriteMapping(path, m); err != nil {
		t.Fatal(err)
	}
	rep, theta, alg := trainSteffle(t, cfg, Settings{Silos: 2, Mode: trainer.FederationMapping, MappingFile: path})
	if len(alg.Lanes) != 6 {
		t.Fatalf("%d lanes, want 6", len(alg.Lanes))
	}
	for _, v := range theta {
		if math.IsNaN(v) {
			t.Fatal("NaN parameter")
		}
	}
	per := alg.SiloPrivacy()
	for _, p := range per {
		if p.Epsilon == nil || *p.Epsilon > cfg.Privacy.Epsilon+1e-9 || *p.Epsilon < 0.5*cfg.Privacy.Epsilon {
			t.Errorf("silo %d: ε %v, want within (0.5, 1]·%v", p.Silo, p.Epsilon, cfg.Privacy.Epsilon)
		}
		if p.Records != 200 {
			t.Errorf("silo %d holds %d sensitive attributes, want 200", p.Silo, p.Records)
		}
	}
	if *rep.Privacy.Epsilon > cfg.Privacy.Epsilon+1e-9 {
		t.Errorf("headline ε %v", *rep.Privacy.Epsilon)
	}
}

// TestSensitiveReleaseIsNoised: the message of a lane run by the silo that
// holds the sensitive attributes carries Gaussian noise of the calibrated
// size. Two runs with the same seed and group sizes public differ only in
// --sigma (1 and 2), so they see the same batches and the same standard
// normal draws: M₁ − (2M₁ − M₂) is silo 3's noise, which must have about
// the std WNoise = λ·StdW/B (W) and StdTheta·λ/B (θ) per value; with the noise
// removed it would be 0.
func TestSensitiveReleaseIsNoised(t *testing.T) {
	msgs := func(sigma float64) ([]Message, *Silo[float64]) {
		cfg := testConfig(4)
		cfg.Privacy.Sigma, cfg.Privacy.Epsilon = sigma, math.Inf(1) // no budget: 30 rounds of any σ
		cfg.Fair.PublicGroupSizes = true
		job := testJob(t, cfg, synthetic(600, 5))
		alg, err := New[float64](job, Settings{Silos: 2, SiloAttribute: "age", Mode: trainer.FederationSensitiveSilo})
		if err != nil {
			t.Fatal(err)
		}
		lane := alg.Silos[0]
		theta := make([]float64, must[Info](t)(lane.Info()).NumParams)
		for i := range theta {
			theta[i] = 0.1 * float64(i%3)
		}
		w := []float64{0.3, -0.2, 0.1, 0.4}
		var out []Message
		for r := 1; r <= 30; r++ {
			msg, err := lane.Round(Request{Round: r, Theta: theta, W: w})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, msg)
		}
		return out, lane
	}
	m1, lane := msgs(1)
	m2, _ := msgs(2)
	b := float64(lane.alg.Batch)
	var zW, zT []float64
	for r := range m1 {
		for i := range m1[r].W {
			noise := m1[r].W[i] - (2*m1[r].W[i] - m2[r].W[i])
			zW = append(zW, noise/lane.alg.WNoise)
		}
		for i := range m1[r].Theta {
			noise := m1[r].Theta[i] - (2*m1[r].Theta[i] - m2[r].Theta[i])
			zT = append(zT, noise/(lane.alg.StdTheta*lane.alg.Lambda/b))
		}
	}
	for name, z := range map[string][]float64{"W": zW, "θ": zT} {
		ms := 0.0
		for _, v := range z {
			ms += v * v
		}
		ms /= float64(len(z))
		// mean of n squared standard normals: 1 ± a few·sqrt(2/n)
		if tol := 5 * math.Sqrt(2/float64(len(z))); math.Abs(ms-1) > tol {
			t.Errorf("%s release: mean squared noise / std² = %.3f over %d values, want 1 ± %.2f", name, ms, len(z), tol)
		}
	}
}

// TestReadMappingErrors: malformed mapping files are refused with the
// file, line and what was expected.
func TestReadMappingErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"header", "id,a,b\n0,0,0\n", `header "id,a,b"`},
		{"range", "record,features_silo,sensitive_silo\n0,0,0\n5,0,1\n", "line 3: record 5"},
		{"dup", "record,features_silo,sensitive_silo\n0,0,0\n0,1,1\n", "line 3: record 0 was already mapped on line 2"},
		{"missing", "record,features_silo,sensitive_silo\n0,0,0\n", "record 1 has no row"},
		{"number", "record,features_silo,sensitive_silo\n0,x,0\n1,0,0\n", `line 2: features_silo "x"`},
	} {
		path := filepath.Join(dir, tc.name+".csv")
		if err := writeFile(path, tc.body); err != nil {
			t.Fatal(err)
		}
		_, err := ReadMapping(path, 2)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want an error with %q and the path", tc.name, err, tc.want)
		}
	}
	m, err := ReadMapping(writeTemp(t, "record,features_silo,sensitive_silo\n1,0,2\n0,1,2\n"), 2)
	if err != nil || m.Silos != 3 || !slices.Equal(m.NonSensitive, []int{1, 0}) || !slices.Equal(m.Sensitive, []int{2, 2}) {
		t.Errorf("got %+v, %v", m, err)
	}
	lanes := m.Lanes()
	if len(lanes) != 2 || lanes[0].Features != 0 || !slices.Equal(lanes[0].Records, []int{1}) || !lanes[0].Split() {
		t.Errorf("lanes %+v", lanes)
	}
}

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.csv")
	if err := writeFile(path, body); err != nil {
		t.Fatal(err)
	}
	return path
}
