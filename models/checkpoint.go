package models

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"time"
	"unsafe"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/nn"
)

// Meta is what a checkpoint records besides the parameters: enough to
// rebuild the model, to know how its inputs must be prepared, and under
// which privacy guarantee it was trained.
type Meta struct {
	// Spec rebuilds the network; Save fills it from the model.
	Spec Spec `json:"spec"`
	// DType is "float32" or "float64"; Save fills it from the model.
	DType string `json:"dtype"`
	// Created is when the checkpoint was made; Save uses the current UTC
	// time when it is zero.
	Created time.Time `json:"created"`
	// Version is the fairdp version that wrote the checkpoint; Save uses
	// BuildVersion() when it is empty.
	Version string `json:"fairdp_version"`
	// Info holds free-form notes (dataset name, command line, …).
	Info map[string]string `json:"info,omitempty"`
	// Privacy is the privacy receipt of the run, stored byte for byte.
	Privacy json.RawMessage `json:"-"`
	// Preprocess describes the dataset preprocessing (feature names,
	// standardisation statistics, …) the model expects, stored byte for byte.
	Preprocess json.RawMessage `json:"-"`
}

// Checkpoint layout (all integers little-endian):
//
//	magic "FAIRDPCK" | u32 format version | u32 len(header) | u32 len(privacy)
//	| u32 len(preprocess) | header JSON | privacy JSON | preprocess JSON
//	| parameter values (float32 or float64, in Params() order) | u32 CRC-32 (IEEE)
//	  of every byte before it
//
// The receipt and preprocessing blobs are separate sections rather than
// header fields so they come back byte for byte (encoding/json would
// re-format them).
//
// Format version 2 is version 1 with a spec whose meaning version 1 readers
// do not know: Spec.InputNormBound, which clips every input row at
// prediction. A reader of version 1 ignores the unknown JSON field and
// would score unclipped rows, so a model with the bound is written as
// version 2, which such readers refuse; a model without it is still
// written as version 1, byte for byte as before.
const (
	magic         = "FAIRDPCK"
	formatVersion = 2 // the newest this build reads and writes
	prefixLen     = len(magic) + 4*4
	maxHeaderLen  = 1 << 24 // JSON header and each JSON blob
)

// header is the JSON section: the metadata and the parameter layout.
type header struct {
	Meta   Meta         `json:"meta"`
	Params []paramEntry `json:"params"`
}

type paramEntry struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// BuildVersion is the fairdp version compiled into the running binary (the
// module version, or the VCS revision of a development build).
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	version := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			version += "+" + s.Value
		}
	}
	if version == "" {
		version = "(devel)"
	}
	return version
}

// dtypeOf names T's precision.
func dtypeOf[T nn.Float]() string {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return "float32"
	}
	return "float64"
}

func dtypeSize(dtype string) (int, error) {
	switch dtype {
	case "float32":
		return 4, nil
	case "float64":
		return 8, nil
	}
	return 0, fmt.Errorf("dtype %q, want \"float32\" or \"float64\"", dtype)
}

// paramShapes are the parameter block shapes a plan's layers hold, in order:
// Linear W {in, out}, b {out}; Conv2d W {outC, inC, k, k}, b {outC}.
func paramShapes(plan []layerPlan) [][]int {
	var shapes [][]int
	for _, p := range plan {
		switch p.kind {
		case kindLinear:
			shapes = append(shapes, []int{p.in, p.out}, []int{p.out})
		case kindConv:
			shapes = append(shapes, []int{p.outC, p.c, p.k, p.k}, []int{p.outC})
		case kindCustom:
			shapes = append(shapes, p.shapes...)
		}
	}
	return shapes
}

// Save writes m and meta as a checkpoint. The model must be one New builds
// (its Spec must reproduce its parameter shapes), so that Load can rebuild it.
func Save[T nn.Float](w io.Writer, m *Model[T], meta Meta) error {
	spec := m.Spec()
	plan, err := spec.plan()
	if err != nil {
		return fmt.Errorf("models: Save: %w", err)
	}
	params := m.Params()
	shapes := paramShapes(plan)
	if len(params) != len(shapes) {
		return fmt.Errorf("models: Save: model has %d parameter blocks but spec %s builds %d; only models made by New can be saved",
			len(params), spec, len(shapes))
	}
	hdr := header{Meta: meta}
	for i, p := range params {
		if !slices.Equal(p.Shape, shapes[i]) || len(p.Value) != shapeSize(p.Shape) {
			return fmt.Errorf("models: Save: parameter %d (%s) has shape %v and %d values, spec %s wants shape %v",
				i, p.Name, p.Shape, len(p.Value), spec, shapes[i])
		}
		hdr.Params = append(hdr.Params, paramEntry{Name: p.Name, Shape: p.Shape})
	}
	hdr.Meta.Spec = spec
	hdr.Meta.DType = dtypeOf[T]()
	if hdr.Meta.Created.IsZero() {
		hdr.Meta.Created = time.Now().UTC()
	}
	if hdr.Meta.Version == "" {
		hdr.Meta.Version = BuildVersion()
	}
	for _, blob := range []struct {
		name string
		data []byte
	}{{"Privacy", meta.Privacy}, {"Preprocess", meta.Preprocess}} {
		if len(blob.data) > 0 && !json.Valid(blob.data) {
			return fmt.Errorf("models: Save: Meta.%s is not valid JSON", blob.name)
		}
		if len(blob.data) > maxHeaderLen {
			return fmt.Errorf("models: Save: Meta.%s has %d bytes, limit %d", blob.name, len(blob.data), maxHeaderLen)
		}
	}
	hdrJSON, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("models: Save: encoding header: %w", err)
	}
	if len(hdrJSON) > maxHeaderLen {
		return fmt.Errorf("models: Save: header has %d bytes, limit %d", len(hdrJSON), maxHeaderLen)
	}

	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	prefix := make([]byte, 0, prefixLen)
	prefix = append(prefix, magic...)
	for _, v := range []int{specFormatVersion(spec), len(hdrJSON), len(meta.Privacy), len(meta.Preprocess)} {
		prefix = binary.LittleEndian.AppendUint32(prefix, uint32(v))
	}
	bw.Write(prefix)
	bw.Write(hdrJSON)
	bw.Write(meta.Privacy)
	bw.Write(meta.Preprocess)
	buf := make([]byte, 0, 1<<16)
	for _, p := range params {
		for _, v := range p.Value {
			if len(buf)+8 > cap(buf) {
				bw.Write(buf)
				buf = buf[:0]
			}
			buf = appendValue(buf, v)
		}
	}
	bw.Write(buf)
	if err := bw.Flush(); err != nil { // bufio keeps the first write error
		return fmt.Errorf("models: Save: %w", err)
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return fmt.Errorf("models: Save: %w", err)
	}
	return nil
}

func appendValue[T nn.Float](buf []byte, v T) []byte {
	if unsafe.Sizeof(v) == 4 {
		return binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(v)))
	}
	return binary.LittleEndian.AppendUint64(buf, math.Float64bits(float64(v)))
}

func shapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// countingReader feeds the CRC and tracks the offset for error messages.
type countingReader struct {
	r   io.Reader
	crc hash.Hash32
	off int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	c.off += int64(n)
	return n, err
}

// read reads exactly n bytes of the named section. The buffer grows with
// the data actually read, so a corrupt length cannot force a huge allocation.
func (c *countingReader) read(n int64, section string) ([]byte, error) {
	start := c.off
	var buf bytes.Buffer
	if n <= 1<<16 {
		buf.Grow(int(n))
	}
	got, err := io.CopyN(&buf, c, n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("truncated in %s: got %d of %d bytes at offset %d", section, got, n, start)
		}
		return nil, fmt.Errorf("reading %s at offset %d: %w", section, start+got, err)
	}
	return buf.Bytes(), nil
}

// decoded is a checkpoint's content before the model is rebuilt.
type decoded struct {
	hdr    header
	plan   []layerPlan
	values []byte // raw little-endian parameter values
	size   int    // bytes per value
}

// decode reads and checks a whole checkpoint: structure, header, sizes and
// CRC. Nothing is built until all of it has been read and verified.
func decode(r io.Reader) (*decoded, error) {
	cr := &countingReader{r: r, crc: crc32.NewIEEE()}
	prefix, err := cr.read(int64(prefixLen), "file prefix (magic, version, section lengths)")
	if err != nil {
		return nil, err
	}
	if string(prefix[:len(magic)]) != magic {
		return nil, fmt.Errorf("not a fairdp checkpoint: starts with %q, want %q", prefix[:len(magic)], magic)
	}
	var fields [4]uint32
	for i := range fields {
		fields[i] = binary.LittleEndian.Uint32(prefix[len(magic)+4*i:])
	}
	if fields[0] < 1 || fields[0] > formatVersion {
		return nil, fmt.Errorf("checkpoint format version %d, this build reads versions 1 to %d", fields[0], formatVersion)
	}
	names := []string{"", "header", "privacy receipt", "preprocessing info"}
	sections := make([][]byte, 4)
	for i := 1; i < 4; i++ {
		if fields[i] > maxHeaderLen {
			return nil, fmt.Errorf("%s length %d exceeds the limit %d (corrupt file?)", names[i], fields[i], maxHeaderLen)
		}
		if sections[i], err = cr.read(int64(fields[i]), names[i]); err != nil {
			return nil, err
		}
		if i > 1 && len(sections[i]) > 0 && !json.Valid(sections[i]) {
			return nil, fmt.Errorf("%s at offset %d is not valid JSON", names[i], cr.off-int64(len(sections[i])))
		}
	}
	d := &decoded{}
	if err := json.Unmarshal(sections[1], &d.hdr); err != nil {
		return nil, fmt.Errorf("header at offset %d: %w", prefixLen, err)
	}
	meta := &d.hdr.Meta
	meta.Privacy = json.RawMessage(sections[2])
	meta.Preprocess = json.RawMessage(sections[3])
	if len(sections[2]) == 0 {
		meta.Privacy = nil
	}
	if len(sections[3]) == 0 {
		meta.Preprocess = nil
	}
	if d.size, err = dtypeSize(meta.DType); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if d.plan, err = meta.Spec.plan(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if v := specFormatVersion(meta.Spec); int(fields[0]) < v {
		return nil, fmt.Errorf("header: a spec with an input norm bound needs format version %d, the file says %d (corrupt or hand-made file?)", v, fields[0])
	}
	shapes := paramShapes(d.plan)
	if len(d.hdr.Params) != len(shapes) {
		return nil, fmt.Errorf("header lists %d parameter blocks, spec %s has %d", len(d.hdr.Params), meta.Spec, len(shapes))
	}
	for i, p := range d.hdr.Params {
		if !slices.Equal(p.Shape, shapes[i]) {
			return nil, fmt.Errorf("header: parameter %d (%s) has shape %v, spec %s wants %v", i, p.Name, p.Shape, meta.Spec, shapes[i])
		}
	}
	n := int64(sumParams(d.plan)) * int64(d.size)
	if d.values, err = cr.read(n, "parameter values"); err != nil {
		return nil, err
	}
	want := cr.crc.Sum32()
	sum, err := cr.read(4, "CRC-32 checksum")
	if err != nil {
		return nil, err
	}
	if got := binary.LittleEndian.Uint32(sum); got != want {
		return nil, fmt.Errorf("CRC-32 mismatch: file says %08x, content gives %08x (corrupt file)", got, want)
	}
	var one [1]byte
	switch _, err := io.ReadFull(r, one[:]); {
	case err == nil:
		return nil, fmt.Errorf("unexpected data after the checksum at offset %d", cr.off)
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("reading after the checksum: %w", err)
	}
	return d, nil
}

// build rebuilds the model in precision T from verified checkpoint content,
// converting values if the checkpoint holds the other precision.
func build[T nn.Float](d *decoded) (*Model[T], error) {
	// The rng only feeds the initialisation that the stored values replace.
	m, err := New[T](d.hdr.Meta.Spec, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, err
	}
	off := 0
	for i, p := range m.Params() {
		if !slices.Equal(p.Shape, d.hdr.Params[i].Shape) {
			return nil, fmt.Errorf("parameter %d (%s): model built from spec has shape %v, checkpoint %v",
				i, p.Name, p.Shape, d.hdr.Params[i].Shape)
		}
		for j := range p.Value {
			if d.size == 4 {
				p.Value[j] = T(math.Float32frombits(binary.LittleEndian.Uint32(d.values[off:])))
			} else {
				p.Value[j] = T(math.Float64frombits(binary.LittleEndian.Uint64(d.values[off:])))
			}
			off += d.size
		}
	}
	return m, nil
}

// Load reads a checkpoint written by Save and rebuilds its model in the
// stored precision: the result is a *Model[float32] or a *Model[float64].
// Everything is verified (sizes, header, CRC-32, and that r ends right after
// the checksum) before the model is built, so a damaged file is an error,
// never a model with wrong weights.
func Load(r io.Reader) (any, Meta, error) {
	m, meta, err := loadAny(r)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("models: Load: %w", err)
	}
	return m, meta, nil
}

func loadAny(r io.Reader) (any, Meta, error) {
	d, err := decode(r)
	if err != nil {
		return nil, Meta{}, err
	}
	var m any
	if d.size == 4 {
		m, err = build[float32](d)
	} else {
		m, err = build[float64](d)
	}
	if err != nil {
		return nil, Meta{}, err
	}
	return m, d.hdr.Meta, nil
}

// Load32 is Load for float32 use; float64 checkpoints are rounded to float32.
func Load32(r io.Reader) (*Model[float32], Meta, error) { return loadAs[float32](r) }

// Load64 is Load for float64 use; float32 checkpoints are widened exactly.
func Load64(r io.Reader) (*Model[float64], Meta, error) { return loadAs[float64](r) }

func loadAs[T nn.Float](r io.Reader) (*Model[T], Meta, error) {
	d, err := decode(r)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("models: Load: %w", err)
	}
	m, err := build[T](d)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("models: Load: %w", err)
	}
	return m, d.hdr.Meta, nil
}

// SaveFile writes the checkpoint to a temporary file in path's directory,
// syncs it and renames it over path, so path never holds half a checkpoint.
func SaveFile[T nn.Float](path string, m *Model[T], meta Meta) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return Save(w, m, meta) }); err != nil {
		return fmt.Errorf("models: SaveFile: %w", err)
	}
	return nil
}

// LoadFile is Load for the checkpoint at path; errors name the file.
func LoadFile(path string) (any, Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("models: LoadFile: %w", err)
	}
	defer f.Close()
	m, meta, err := loadAny(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return nil, Meta{}, fmt.Errorf("models: LoadFile %s: %w", path, err)
	}
	return m, meta, nil
}

// specFormatVersion is the format version a checkpoint of spec is written
// as: 2 when the spec clips rows at prediction (InputNormBound), which
// version 1 readers would silently skip, else 1.
func specFormatVersion(spec Spec) int {
	if spec.InputNormBound > 0 {
		return 2
	}
	return 1
}
