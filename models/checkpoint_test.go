package models

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairdp/fairdp/nn"
)

// checkpointSpecs are small models of every arch.
var checkpointSpecs = []Spec{
	{Arch: "logistic", InShape: []int{4}, Classes: 2},
	{Arch: "logistic", InShape: []int{4}, Classes: 3},
	{Arch: "mlp", InShape: []int{5}, Classes: 2, Hidden: []int{3, 2}},
	{Arch: "mnist-cnn", InShape: []int{1, 16, 16}, Classes: 10},
	{Arch: "vgg", InShape: []int{2, 16, 16}, Classes: 3},
}

func testMeta() Meta {
	return Meta{
		Created:    time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
		Version:    "test-1",
		Info:       map[string]string{"dataset": "adult", "cmd": "fairdp train --epsilon 1"},
		Privacy:    json.RawMessage("{\n  \"epsilon\": 1.0,  \"delta\": 1e-5,\n  \"accountant\": \"rdp\"\n}"),
		Preprocess: json.RawMessage(`{"features":["age","fnlwgt"],"mean":[38.5,189000]}`),
	}
}

// perturb makes parameters that are not what New would draw, including
// values whose bits would not survive a decimal round trip.
func perturb[T nn.Float](m *Model[T]) {
	for _, p := range m.Params() {
		for i := range p.Value {
			p.Value[i] = p.Value[i]*T(1+1e-7) + T(math.Pi*1e-9)
		}
	}
	if ps := m.Params(); len(ps[0].Value) > 3 {
		ps[0].Value[0] = T(math.Inf(-1))
		ps[0].Value[1] = T(math.SmallestNonzeroFloat64) // rounds to 0 in float32
		ps[0].Value[2] = T(math.Copysign(0, -1))
	}
}

func saveBytes[T nn.Float](t testing.TB, m *Model[T], meta Meta) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Save(&buf, m, meta); err != nil {
		t.Fatalf("Save: %v", err)
	}
	return buf.Bytes()
}

func sameParams[T nn.Float](t *testing.T, got, want *Model[T]) {
	t.Helper()
	gp, wp := got.Params(), want.Params()
	if len(gp) != len(wp) {
		t.Fatalf("%d parameter blocks, want %d", len(gp), len(wp))
	}
	for i := range wp {
		if !reflect.DeepEqual(gp[i].Shape, wp[i].Shape) {
			t.Fatalf("param %d shape %v, want %v", i, gp[i].Shape, wp[i].Shape)
		}
		for j := range wp[i].Value {
			if bitsOf(gp[i].Value[j]) != bitsOf(wp[i].Value[j]) {
				t.Fatalf("param %d value %d = %v, want %v (bit-exact)", i, j, gp[i].Value[j], wp[i].Value[j])
			}
		}
	}
}

func bitsOf[T nn.Float](v T) uint64 {
	switch x := any(v).(type) {
	case float32:
		return uint64(math.Float32bits(x))
	case float64:
		return math.Float64bits(x)
	}
	panic("unreachable")
}

func roundTrip[T nn.Float](t *testing.T, spec Spec) {
	m, err := New[T](spec, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	perturb(m)
	meta := testMeta()
	data := saveBytes(t, m, meta)
	loaded, got, err := Load(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: Load: %v", spec, err)
	}
	lm, ok := loaded.(*Model[T])
	if !ok {
		t.Fatalf("%s: Load returned %T, want %T", spec, loaded, m)
	}
	sameParams(t, lm, m)
	if !reflect.DeepEqual(lm.Spec(), spec) {
		t.Errorf("loaded spec %+v, want %+v", lm.Spec(), spec)
	}
	meta.Spec, meta.DType = spec, dtypeOf[T]()
	if !got.Created.Equal(meta.Created) {
		t.Errorf("Created %v, want %v", got.Created, meta.Created)
	}
	got.Created = meta.Created
	if !reflect.DeepEqual(got, meta) {
		t.Errorf("meta round trip:\n got %+v\nwant %+v", got, meta)
	}
	if !bytes.Equal(got.Privacy, testMeta().Privacy) {
		t.Errorf("privacy receipt not verbatim: %q", got.Privacy)
	}
	// Saving the loaded model again gives the same bytes.
	if again := saveBytes(t, lm, got); !bytes.Equal(again, data) {
		t.Errorf("%s: re-saving a loaded checkpoint changed its bytes", spec)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	for _, spec := range checkpointSpecs {
		t.Run(spec.Arch+"/float32", func(t *testing.T) { roundTrip[float32](t, spec) })
		t.Run(spec.Arch+"/float64", func(t *testing.T) { roundTrip[float64](t, spec) })
	}
}

// TestCheckpointDefaults checks what Save fills in and that empty receipts
// stay empty.
func TestCheckpointDefaults(t *testing.T) {
	m, err := New[float32](checkpointSpecs[0], rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	_, meta, err := Load(bytes.NewReader(saveBytes(t, m, Meta{})))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Created.Before(before) || meta.Created.After(time.Now().Add(time.Second)) {
		t.Errorf("Created = %v, want about now", meta.Created)
	}
	if meta.Version == "" || meta.DType != "float32" || meta.Privacy != nil || meta.Preprocess != nil || meta.Info != nil {
		t.Errorf("defaults: %+v", meta)
	}
}

// TestLoadConverts checks the typed loaders: float32 widens exactly,
// float64 rounds to nearest float32.
func TestLoadConverts(t *testing.T) {
	spec := checkpointSpecs[2]
	m32, _ := New[float32](spec, rand.New(rand.NewPCG(5, 6)))
	m64, _ := New[float64](spec, rand.New(rand.NewPCG(5, 6)))
	wide, _, err := Load64(bytes.NewReader(saveBytes(t, m32, Meta{})))
	if err != nil {
		t.Fatal(err)
	}
	narrow, _, err := Load32(bytes.NewReader(saveBytes(t, m64, Meta{})))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range m32.Params() {
		for j, v := range p.Value {
			if wide.Params()[i].Value[j] != float64(v) {
				t.Fatalf("Load64 of float32: %v, want %v", wide.Params()[i].Value[j], v)
			}
			if w := float32(m64.Params()[i].Value[j]); narrow.Params()[i].Value[j] != w {
				t.Fatalf("Load32 of float64: %v, want %v", narrow.Params()[i].Value[j], w)
			}
		}
	}
}

// TestCheckpointCorruption: every truncation, every flipped byte and any
// trailing data must give an error, never a model.
func TestCheckpointCorruption(t *testing.T) {
	m, _ := New[float64](Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, rand.New(rand.NewPCG(7, 8)))
	data := saveBytes(t, m, testMeta())
	for n := 0; n < len(data); n++ {
		if _, _, err := Load(bytes.NewReader(data[:n])); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(data))
		}
	}
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0xff
		if _, _, err := Load(bytes.NewReader(bad)); err == nil {
			t.Fatalf("byte %d of %d flipped: no error", i, len(data))
		}
		bad[i] ^= 0xfe // flip a single bit
		if _, _, err := Load(bytes.NewReader(bad)); err == nil {
			t.Fatalf("bit 0 of byte %d flipped: no error", i)
		}
	}
	if _, _, err := Load(bytes.NewReader(append(bytes.Clone(data), 0))); err == nil ||
		!strings.Contains(err.Error(), "unexpected data after the checksum") {
		t.Errorf("trailing byte: error %v", err)
	}
}

// TestCheckpointErrorMessages checks that errors say what is wrong and where.
func TestCheckpointErrorMessages(t *testing.T) {
	m, _ := New[float32](Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, rand.New(rand.NewPCG(7, 8)))
	data := saveBytes(t, m, Meta{Version: "v"})
	hdrLen := int(binary.LittleEndian.Uint32(data[12:]))
	valuesAt := prefixLen + hdrLen
	withVersion := bytes.Clone(data)
	binary.LittleEndian.PutUint32(withVersion[8:], 9)
	corruptValue := bytes.Clone(data)
	corruptValue[valuesAt] ^= 1
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated in file prefix (magic, version, section lengths): got 0 of 24 bytes at offset 0"},
		{"magic", append([]byte("PK\x03\x04"), data[4:]...), `not a fairdp checkpoint: starts with "PK\x03\x04DPCK"`},
		{"version", withVersion, "checkpoint format version 9, this build reads versions 1 to 2"},
		{"values", data[:valuesAt+5], "truncated in parameter values: got 5 of 16 bytes at offset " + strconv.Itoa(valuesAt)},
		{"crc", data[:len(data)-2], "truncated in CRC-32 checksum: got 2 of 4 bytes"},
		{"flip", corruptValue, "CRC-32 mismatch"},
	}
	for _, tc := range tests {
		_, _, err := Load(bytes.NewReader(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "models: Load: ") {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// TestSaveRefuses checks models and metadata Save cannot store faithfully.
func TestSaveRefuses(t *testing.T) {
	m, _ := New[float32](Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}, rand.New(rand.NewPCG(7, 8)))
	var buf bytes.Buffer
	if err := Save(&buf, m, Meta{Privacy: json.RawMessage("{epsilon: 1")}); err == nil ||
		!strings.Contains(err.Error(), "Meta.Privacy is not valid JSON") {
		t.Errorf("invalid receipt: error %v", err)
	}
	custom := &Model[float32]{Arch: "logistic", InShape: []int{3}, Classes: 2,
		Layers: []nn.Layer[float32]{nn.NewLinear[float32](3, 4), nn.NewReLU[float32](), nn.NewLinear[float32](4, 1)}}
	if err := Save(&buf, custom, Meta{}); err == nil || !strings.Contains(err.Error(), "only models made by New can be saved") {
		t.Errorf("custom model: error %v", err)
	}
}

func TestSaveFileLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.fdp")
	m, _ := New[float32](checkpointSpecs[3], rand.New(rand.NewPCG(9, 10)))
	if err := os.WriteFile(path, []byte("old content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SaveFile(path, m, testMeta()); err != nil {
		t.Fatal(err)
	}
	loaded, meta, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sameParams(t, loaded.(*Model[float32]), m)
	if meta.Info["dataset"] != "adult" {
		t.Errorf("Info %v", meta.Info)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after SaveFile, want only model.fdp", len(entries))
	}
	// A failed save leaves neither a temp file nor a changed target.
	if err := SaveFile(path, m, Meta{Preprocess: json.RawMessage("[")}); err == nil {
		t.Error("SaveFile with invalid Preprocess: no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("failed SaveFile left %d entries", len(entries))
	}
	if _, _, err := LoadFile(path); err != nil {
		t.Errorf("target damaged by failed SaveFile: %v", err)
	}
	missing := filepath.Join(dir, "no", "such.fdp")
	if err := SaveFile(missing, m, Meta{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("SaveFile into missing dir: error %v, want it to name the path", err)
	}
	os.WriteFile(path, []byte("FAIRDPCK"), 0o644)
	if _, _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "truncated") {
		t.Errorf("LoadFile of truncated file: error %v, want it to name the file", err)
	}
}

// FuzzLoad: Load never panics; whatever it accepts saves and loads again to
// the same parameters.
func FuzzLoad(f *testing.F) {
	addSeeds(f, false)
	f.Fuzz(checkLoad)
}

// FuzzLoadWithValidCRC appends the right CRC-32 to the fuzzed bytes, so the
// fuzzer gets past the checksum into the header, spec and size checks.
func FuzzLoadWithValidCRC(f *testing.F) {
	addSeeds(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLoad(t, binary.LittleEndian.AppendUint32(bytes.Clone(data), crc32.ChecksumIEEE(data)))
	})
}

func addSeeds(f *testing.F, stripCRC bool) {
	cut := 0
	if stripCRC {
		cut = 4
	}
	for i, spec := range checkpointSpecs[:3] {
		m32, _ := New[float32](spec, rand.New(rand.NewPCG(uint64(i), 1)))
		m64, _ := New[float64](spec, rand.New(rand.NewPCG(uint64(i), 2)))
		d32, d64 := saveBytes(f, m32, testMeta()), saveBytes(f, m64, Meta{})
		f.Add(d32[:len(d32)-cut])
		f.Add(d64[:len(d64)-cut])
		f.Add(d32[:len(d32)/2])
	}
	f.Add([]byte("FAIRDPCK\x01\x00\x00\x00\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
}

func checkLoad(t *testing.T, data []byte) {
	loaded, meta, err := Load(bytes.NewReader(data))
	if err != nil {
		return
	}
	var buf bytes.Buffer
	switch m := loaded.(type) {
	case *Model[float32]:
		err = Save(&buf, m, meta)
	case *Model[float64]:
		err = Save(&buf, m, meta)
	default:
		t.Fatalf("Load returned %T", loaded)
	}
	if err != nil {
		t.Fatalf("re-saving an accepted checkpoint: %v", err)
	}
	again, _, err := Load(&buf)
	if err != nil {
		t.Fatalf("re-loading: %v", err)
	}
	if a, ok := again.(*Model[float32]); ok {
		sameParams(t, a, loaded.(*Model[float32]))
	} else {
		sameParams(t, again.(*Model[float64]), loaded.(*Model[float64]))
	}
}

// TestCustomModelCheckpoint checks "a checkpoint of a
// custom (non-zoo) model round-trips bit-exactly": a network assembled from
// nn layers saves its layer list and loads back with the same layers and
// every parameter bit for bit. It includes a convolution with a per-axis
// window and a Linear without a bias (one parameter block).
func TestCustomModelCheckpoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	conv, lin := nn.NewConv2d[float32](2, 6, 6, 3, 3, 1, 1), nn.NewLinear[float32](2*2*2, 5)
	rect := nn.NewConv2dWindow[float32](3, 3, 3, 2, nn.ConvWindow{KH: 2, KW: 3, StrideH: 1, StrideW: 2, PadH: 0, PadW: 1})
	noBias := nn.NewLinearNoBias[float32](5, 4)
	conv.Init(rng)
	rect.Init(rng)
	lin.Init(rng)
	noBias.Init(rng)
	gn := nn.NewGroupNorm[float32](3, 3, 6, 6)
	for i := range gn.Params()[1].Value {
		gn.Params()[1].Value[i] = float32(i) / 7 // non-default β
	}
	m := &Model[float32]{Arch: "my-net", InShape: []int{2, 6, 6}, Classes: 4, Layers: []nn.Layer[float32]{
		conv, gn, nn.NewLeakyReLU[float32](0.1), nn.NewMaxPool2d[float32](3, 6, 6, 2), rect, nn.NewTanh[float32](), nn.NewFlatten[float32](),
		lin, nn.NewReLU[float32](), noBias}}
	var buf bytes.Buffer
	if err := Save(&buf, m, Meta{}); err != nil {
		t.Fatal(err)
	}
	anyModel, meta, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := anyModel.(*Model[float32])
	if meta.Spec.Arch != "my-net" || len(meta.Spec.Layers) != len(m.Layers) {
		t.Fatalf("spec %+v", meta.Spec)
	}
	for i, l := range got.Layers {
		if l.Name() != m.Layers[i].Name() {
			t.Errorf("layer %d: %s, want %s", i, l.Name(), m.Layers[i].Name())
		}
	}
	want, have := m.Params(), got.Params()
	if len(want) != 9 || got.NumParams() != m.NumParams() {
		t.Fatalf("%d parameter blocks and %d parameters, want 9 blocks (no bias block for the last layer) and %d", len(want), got.NumParams(), m.NumParams())
	}
	if len(want) != len(have) {
		t.Fatalf("%d parameter blocks, want %d", len(have), len(want))
	}
	for i := range want {
		for j := range want[i].Value {
			if math.Float32bits(want[i].Value[j]) != math.Float32bits(have[i].Value[j]) {
				t.Fatalf("parameter %d[%d] = %v, want %v", i, j, have[i].Value[j], want[i].Value[j])
			}
		}
	}
	// A description whose layers do not chain is refused.
	bad := m.Spec()
	bad.Layers[len(bad.Layers)-1].In = 7
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "takes 7 inputs") {
		t.Errorf("broken chain: %v", err)
	}
}
