package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSigmaCap: a given Privacy.Sigma with a finite
// Privacy.Epsilon is refused when the accountant shows it spends more (the
// old code ran it and reported ε = 1 beside a receipt of ε ≈ 50), and runs
// when it stays within (ε is then a cap). The ε each σ spends is derived
// from the receipt of the same run uncapped (Epsilon +Inf), so the refusal
// quotes exactly what the run would have spent.
func TestSigmaCap(t *testing.T) {
	seed := uint64(4)
	run := func(sigma, eps float64, out string) (*Report, error) {
		cfg := Defaults()
		cfg.Seed, cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Quiet, cfg.Out = &seed, "dpsgd", 400, 2, true, out
		cfg.Privacy.Sigma, cfg.Privacy.Epsilon = sigma, eps
		job, err := Prepare(cfg, PrepareOptions{Log: &bytes.Buffer{}})
		if err != nil {
			t.Fatal(err)
		}
		return Train(context.Background(), job)
	}
	spent := func(sigma float64) float64 {
		rep, err := run(sigma, math.Inf(1), "")
		if err != nil {
			t.Fatal(err)
		}
		return *rep.Privacy.Epsilon
	}
	small, large := spent(0.3), spent(3)
	if !(small > 1 && large < small) {
		t.Fatalf("setup: σ 0.3 spends %v, σ 3 spends %v; want the first above ε = 1", small, large)
	}
	for _, tc := range []struct {
		name       string
		sigma, eps float64
		refuse     bool
	}{
		{"σ spends more than ε", 0.3, 1, true},
		{"σ spends just more than ε", 3, large * (1 - 1e-6), true},
		{"σ spends exactly ε", 3, large, false},
		{"σ well within ε", 3, 2 * large, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			rep, err := run(tc.sigma, tc.eps, out)
			if !tc.refuse {
				if err != nil {
					t.Fatal(err)
				}
				if *rep.Privacy.Epsilon > tc.eps || rep.Config.Privacy.Epsilon != tc.eps {
					t.Fatalf("receipt ε %v, config ε %v: the cap %v is not honoured", *rep.Privacy.Epsilon, rep.Config.Privacy.Epsilon, tc.eps)
				}
				return
			}
			var fe FieldErrors
			if !errors.As(err, &fe) || fe[0].Field != "Privacy.Sigma" {
				t.Fatalf("error %v, want a Privacy.Sigma refusal", err)
			}
			want := fmt.Sprintf("spends ε = %.4g", spent(tc.sigma))
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Privacy.Epsilon") {
				t.Fatalf("error %q, want it to say %q and how to fix it", err, want)
			}
			if _, err := os.Stat(filepath.Join(out, "report.json")); !os.IsNotExist(err) {
				t.Fatalf("a refused run wrote report.json (stat: %v)", err)
			}
		})
	}
}
