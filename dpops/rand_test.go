package dpops_test

import (
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
)

// chacha returns Go's ChaCha8 keyed with a hex key computed outside Go
// (Python hashlib/hmac), the independent path for the key derivation.
func chacha(t *testing.T, hexKey string) *mrand.Rand {
	t.Helper()
	b, err := hex.DecodeString(hexKey)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad test key %q", hexKey)
	}
	var k [32]byte
	copy(k[:], b)
	return mrand.New(mrand.NewChaCha8(k))
}

// The seeded key is SHA-256("fairdp/dpops/seed/v1\x00" ‖ seed as 8 bytes LE)
// and a derived key is HMAC-SHA256(root key, label); the hex keys below were
// computed with Python's hashlib and hmac. The first outputs are pinned so a
// change to the key schedule (which would silently change every seeded run)
// fails here.
func TestNewRandSeededKeySchedule(t *testing.T) {
	tests := []struct {
		seed                uint64
		rootKey, noiseKey   string
		root0, root1, root2 uint64
		noise0              uint64
	}{
		{0, "505dc3d8b15452a30a9a2c82714f4abf6dcddc035e1d071d28365ff52cc208fa",
			"ae28d342eae3e170ad7230a784bde5b8a2102d1374abff983f011c14ebb0ecdb",
			0xf89d869994b95aa7, 0x17c678ac52eb9aaa, 0xa2e8269ad4e8ea31, 0x68894d6b1b30e50e},
		{1, "8a5cf7b4e5ca47a275a12b6084997f93cb25e551ed686d3c919d2e200c3f7610",
			"e4e824bca07984722e87aa2bafbd382c3725307607a120d375720bbbfa5ad470",
			0x2e405a19790590a5, 0x00a37a2816659fae, 0x1963ad63f71727f4, 0xc4a5e3a6a99c0600},
		{42, "7068e46ef22539210a98851733ced4f6022d04cbddc34f4b10ae54971fe8031d",
			"2b926259981c7ec6a01f393d3e743105237d051e2ee1d10b71c21d7c4c11ae9c",
			0x827f1ee2765decd5, 0xc576c03063aafb89, 0x03cec12d57ccb155, 0xd1bd310a259e8a45},
	}
	for _, tc := range tests {
		r, src := dpops.NewRand(&tc.seed)
		if !src.Seeded || src.Seed != tc.seed {
			t.Errorf("seed %d: Source = %+v, want Seeded with Seed %d", tc.seed, src, tc.seed)
		}
		want := chacha(t, tc.rootKey)
		for i, lit := range []uint64{tc.root0, tc.root1, tc.root2} {
			got, ref := r.Uint64(), want.Uint64()
			if got != ref || got != lit {
				t.Errorf("seed %d root draw %d = %#x, want %#x (independent key) and %#x (pinned)", tc.seed, i, got, ref, lit)
			}
		}
		d, ref := src.Derive("noise").Uint64(), chacha(t, tc.noiseKey).Uint64()
		if d != ref || d != tc.noise0 {
			t.Errorf("seed %d Derive(noise) first draw = %#x, want %#x (independent key) and %#x (pinned)", tc.seed, d, ref, tc.noise0)
		}
	}
}

func TestNewRandSeededIsReproducible(t *testing.T) {
	seed := uint64(7)
	a, _ := dpops.NewRand(&seed)
	b, _ := dpops.NewRand(&seed)
	for i := range 10000 {
		if x, y := a.NormFloat64(), b.NormFloat64(); x != y {
			t.Fatalf("draw %d: %v != %v for the same seed", i, x, y)
		}
	}
	other := uint64(8)
	c, _ := dpops.NewRand(&other)
	a2, _ := dpops.NewRand(&seed)
	if a2.Uint64() == c.Uint64() {
		t.Error("seeds 7 and 8 gave the same first draw")
	}
}

func TestNewRandUnseededDiffers(t *testing.T) {
	a, srcA := dpops.NewRand(nil)
	b, srcB := dpops.NewRand(nil)
	if srcA.Seeded || srcB.Seeded {
		t.Fatalf("unseeded Source says Seeded: %+v", srcA)
	}
	same := 0
	for range 4 {
		if a.Uint64() == b.Uint64() {
			same++
		}
	}
	if same == 4 { // probability 2⁻²⁵⁶ for a working crypto/rand
		t.Error("two unseeded runs produced the same stream")
	}
	if srcA.Derive("noise").Uint64() == srcB.Derive("noise").Uint64() { // probability 2⁻⁶⁴
		t.Error("two unseeded runs derived the same noise stream")
	}
}

// A derived stream depends only on the root key and the label: not on what
// was drawn from the root or from other streams, nor on which other streams
// exist — so adding a feature leaves the other streams of a seeded run alone.
func TestDeriveIsOrderIndependent(t *testing.T) {
	seed := uint64(3)
	draw := func(r *mrand.Rand) [4]uint64 {
		return [4]uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
	}

	_, plain := dpops.NewRand(&seed)
	want := draw(plain.Derive("noise"))

	root, busy := dpops.NewRand(&seed)
	for range 1000 {
		root.Uint64()
	}
	draw(busy.Derive("shuffle"))
	draw(busy.Derive("a-new-feature"))
	if got := draw(busy.Derive("noise")); got != want {
		t.Errorf("Derive(noise) changed after other draws: %x, want %x", got, want)
	}
	if got := draw(busy.Derive("noise")); got != want {
		t.Errorf("second Derive(noise) = %x, want the same stream %x", got, want)
	}
	streams := map[[4]uint64]string{want: "noise"}
	root2, src := dpops.NewRand(&seed)
	for _, label := range []string{"shuffle", "sampling", "Noise", "noise ", ""} {
		s := draw(src.Derive(label))
		if prev, dup := streams[s]; dup {
			t.Errorf("labels %q and %q gave the same stream", label, prev)
		}
		streams[s] = label
	}
	if _, dup := streams[draw(root2)]; dup {
		t.Error("a derived stream equals the root stream")
	}
}

func TestDeriveOnZeroSourcePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Derive on a zero Source did not panic; it would give every run the same noise")
		}
	}()
	var zero dpops.Source
	zero.Derive("noise")
}

func TestSourceString(t *testing.T) {
	seed := uint64(42)
	_, seeded := dpops.NewRand(&seed)
	_, secure := dpops.NewRand(nil)
	tests := []struct {
		src      dpops.Source
		contains string
	}{
		{seeded, "--seed 42"},
		{seeded, "NOT secure"},
		{secure, "crypto/rand"},
	}
	for _, tc := range tests {
		if s := tc.src.String(); !strings.Contains(s, tc.contains) {
			t.Errorf("String() = %q, want it to contain %q", s, tc.contains)
		}
	}
	if strings.Contains(secure.String(), "NOT secure") {
		t.Errorf("unseeded String() = %q says NOT secure", secure.String())
	}
}

// A seeded run splits its randomness into named streams; the receipt records
// the Source.
func ExampleNewRand() {
	seed := uint64(42)
	_, src := dpops.NewRand(&seed)
	shuffleRand := src.Derive("shuffle") // data order
	noiseRand := src.Derive("noise")     // gradient noise
	_, _ = shuffleRand, noiseRand
	fmt.Println(src.Seeded, src.Seed)
	fmt.Println(src)
	// Output:
	// true 42
	// ChaCha8 keyed from --seed 42: bit-reproducible, NOT secure (noise is predictable from the seed)
}
