package federated

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// TestSpentSiloSaysSo: a silo whose budget is spent,
// asked for round 1 by a new federation over gRPC, answers that its budget
// is spent (accounting.ErrBudgetExceeded, final), not that the request is malformed; a silo
// with budget left that is asked for a round it has passed says to resume
// the server from its checkpoint of the last answered round.
func TestSpentSiloSaysSo(t *testing.T) {
	cfg := testConfig(33)
	cfg.Privacy.Epsilon = 0.8
	silo := buildSilos(t, cfg, synthetic(300, 5))[0]
	rounds := 0
	for ; rounds < 1000; rounds++ {
		if _, err := silo.Round(request(silo, rounds+1, 0.01)); errors.Is(err, accounting.ErrBudgetExceeded) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if rounds < 2 || rounds == 1000 {
		t.Fatalf("the silo answered %d rounds before its budget refusal; the test needs a few", rounds)
	}
	certs := certDir(t)
	addr, stop := startSilo(t, silo, "", certs, nil)
	defer stop()
	c := dialAll(t, []string{addr}, certs)[0]
	_, err := c.Round(context.Background(), request(silo, 1, 0.5))
	if !errors.Is(err, accounting.ErrBudgetExceeded) || errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "has spent its privacy budget") {
		t.Errorf("a spent silo asked for round 1: %v; want a budget error saying the budget is spent", err)
	}
	t.Log(err)

	fresh := buildSilos(t, testConfig(33), synthetic(300, 5))[0]
	for r := 1; r <= 2; r++ {
		if _, err := fresh.Round(request(fresh, r, 0.01)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = fresh.Round(request(fresh, 1, 0.5))
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "resume the server from its checkpoint of round 2") {
		t.Errorf("a silo with budget left asked for a passed round: %v", err)
	}
}

// TestMismatchedCertificates: a server whose
// certificate directory is of another federation is told which
// certificate failed and why, at once (no retries), instead of "unreachable
// … resume from the checkpoint". Both directions: the server refusing the
// silo's certificate (another CA in its ca.pem) and the silo refusing the
// server's (server.pem signed by another CA).
func TestMismatchedCertificates(t *testing.T) {
	cfg := testConfig(34)
	silo := buildSilos(t, cfg, synthetic(300, 6))[0]
	ours, theirs := certDir(t), certDir(t)
	addr, stop := startSilo(t, silo, "", ours, nil)
	defer stop()
	// Our CA (so the server accepts the silo) with their server
	// certificate (so the silo refuses the server).
	mixed := t.TempDir()
	for _, f := range []struct{ from, name string }{{ours, "ca.pem"}, {theirs, "server.pem"}, {theirs, "server-key.pem"}} {
		raw, err := os.ReadFile(filepath.Join(f.from, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mixed, f.name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, certs string
		want        []string
	}{
		{"server refuses the silo", theirs, []string{"refused silo " + addr + "'s certificate", "signed by another CA", "unknown authority"}},
		{"silo refuses the server", mixed, []string{"silo " + addr + " rejected the server's certificate", "unknown certificate authority"}},
	} {
		var log bytes.Buffer
		sc := serverConfig(cfg)
		sc.Retries, sc.Log = 4, &log
		_, err := NewServer[float64](context.Background(), sc, dialAll(t, []string{addr}, tc.certs))
		if !errors.Is(err, ErrTLS) || strings.Contains(err.Error(), "unreachable") {
			t.Errorf("%s: %v; want a TLS error, not an unreachable silo", tc.name, err)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", tc.name, err, w)
			}
		}
		if n := strings.Count(log.String(), "retrying"); n > 0 {
			t.Errorf("%s: %d retries of a certificate failure:\n%s", tc.name, n, log.String())
		}
	}
}
