package trainer

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/models"
)

// nameOnly is a Method by name alone, as a Config names its algorithm:
// it stands for fermi.Method and dpsgdf.Method, which this package's
// tests cannot import.
type nameOnly string

func (m nameOnly) Algo() AlgoName          { return AlgoName(m) }
func (m nameOnly) Configure(*Config) error { return nil }

// TestUnregisteredMethodNamesImport: an algorithm named by a string whose
// package the program does not import ("fermi" without
// `import _ "github.com/fairdp/fairdp/fermi"`) compiled, passed NewPrivate and Prepare, and
// failed only in Train with `Algo "fermi" is unknown (known: [dpsgd sgd])`.
// Prepare (and so NewPrivate), with or without a checkpoint, and Train now refuse it
// naming the import. (fermi.Method and dpsgdf.Method cannot reach this:
// naming them imports the package.)
func TestUnregisteredMethodNamesImport(t *testing.T) {
	for _, m := range []AlgoName{"fermi", "dpsgdf", "naive"} {
		t.Run(string(m), func(t *testing.T) {
			if c, ok := algorithms[m]; ok { // this test binary links it: unlink it here
				delete(algorithms, m)
				defer func() { algorithms[m] = c }()
			}
			want := `add import _ "` + registeredBy[m] + `"`
			check := func(what string, err error) {
				t.Helper()
				var fe FieldErrors
				if !errors.As(err, &fe) || fe[0].Field != "Algo" || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %v, want an Algo refusal saying %s", what, err, want)
				}
			}
			_, err := NewPrivate(PrivateOptions{Dataset: "adult", Limit: 300, Epsilon: 1, Method: nameOnly(m)})
			check("NewPrivate", err)
			cfg := Defaults()
			cfg.Algo, cfg.Limit = m, 300
			_, err = Prepare(cfg, PrepareOptions{Checkpoint: CheckpointOptions{Dir: t.TempDir()}})
			check("Prepare with a checkpoint", err)
			cfg.Algo = "dpsgd"
			job, err := Prepare(cfg, PrepareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			job.Cfg.Algo = m
			_, err = Train(context.Background(), job)
			check("Train", err)
		})
	}
}

// TestPrivateOptionsAllowLargeDelta: the δ ≥ 1/n refusal advises allowing
// a large δ explicitly, which PrivateOptions had no field for.
func TestPrivateOptionsAllowLargeDelta(t *testing.T) {
	for _, allow := range []bool{false, true} {
		seed := uint64(2)
		p, err := NewPrivate(PrivateOptions{Dataset: "adult", Limit: 400, Epsilon: 1, Delta: 0.01, AllowLargeDelta: allow,
			Epochs: 1, Batch: 64, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		if n := p.Train.N(); !(0.01 >= 1/float64(n)) {
			t.Fatalf("setup: δ 0.01 is below 1/n for n = %d", n)
		}
		m, err := models.New[float32](ModelSpec(p.Config(), p.Train), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := TrainPrivate(context.Background(), p, Model[float32](m))
		var large *accounting.LargeDeltaError
		switch {
		case !allow && !errors.As(err, &large):
			t.Errorf("δ 0.01 not allowed: error %v, want the large-δ refusal", err)
		case allow && err != nil:
			t.Errorf("AllowLargeDelta: %v", err)
		case allow && (rep.Privacy.Delta != 0.01 || !strings.Contains(rep.Privacy.Note, "allowed by the user")):
			t.Errorf("AllowLargeDelta: receipt δ %v, note %q", rep.Privacy.Delta, rep.Privacy.Note)
		}
	}
}

// TestPrivateOptionsDocumentedDefaults: the "(0: X)" each PrivateOptions
// field's comment promises is the value a zero option takes (LR's said
// 0.01 while 0.005 was used); "data-aware" ones are checked by
// TestNewPrivateAdaptsDefaults.
func TestPrivateOptionsDocumentedDefaults(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "private.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := PrivateOptions{}.config()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{"Epochs": float64(cfg.Epochs), "Batch": float64(cfg.Batch), "LR": cfg.LR, "Clip": cfg.Privacy.Clip}
	zero := regexp.MustCompile(`\(0: ([0-9.]+|data-aware)\)`)
	checked := 0
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "PrivateOptions" {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			doc := field.Doc.Text() + field.Comment.Text()
			m := zero.FindStringSubmatch(doc)
			if m == nil {
				continue
			}
			name := field.Names[0].Name
			want, ok := got[name]
			if !ok {
				t.Errorf("%s documents a zero default %s this test does not check", name, m[1])
				continue
			}
			if m[1] == "data-aware" { // AdaptToData's rule: TestNewPrivateAdaptsDefaults
				checked++
				continue
			}
			if v, _ := strconv.ParseFloat(m[1], 64); v != want {
				t.Errorf("PrivateOptions.%s: the comment says 0 takes %s, it takes %v", name, m[1], want)
			}
			checked++
		}
		return false
	})
	if checked != len(got) {
		t.Errorf("checked %d documented defaults, want %d", checked, len(got))
	}
}
