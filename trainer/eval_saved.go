package trainer

// The model files `fairdp eval` reads: checkpoints (model.ckpt), and the
// JSON model files of pipelines that do not train a network (the
// randomised classifiers of package linear write model.json), read by
// the reader their package registers, as pipelines register themselves
// (RegisterPipeline): the loop does not import the algorithms.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/models"
)

// SavedModel is a trained model as eval scores it: what its file says of
// itself and of the data it was trained on, and how to score it.
type SavedModel struct {
	// Arch describes the model (the report's model line); DType is the
	// precision it scores in.
	Arch, DType string
	// Params is the number of values the model file holds.
	Params int
	// Receipt is the run's privacy receipt as stored (empty: none).
	Receipt json.RawMessage
	// Split is the train/test split the model was trained on (nil: the
	// file records none, and eval refuses it, as it cannot tell the
	// held-out records).
	Split *SplitRecord
	// Preprocess is the preprocessing fitted on the training split, as
	// stored (JSON of a loaders.Preprocessor; empty for image data).
	Preprocess json.RawMessage
	// Scored is added to what eval says it scored ("the metrics are
	// expected over the classifier's coins"); empty for a checkpoint.
	Scored string
	// Score scores the model on d, encoded with Preprocess.
	Score func(d *loaders.Dataset) (metrics.Split, error)
}

// modelFileKey is the key of a JSON model file's kind ({"kind": "postproc",
// …}): the name a ModelFileReader is registered under.
const modelFileKey = "kind"

// ModelFileReader reads a JSON model file of its kind (raw is the whole
// file, path its name for errors).
type ModelFileReader func(path string, raw []byte) (*SavedModel, error)

var (
	modelFileMu      sync.RWMutex
	modelFileReaders = map[string]ModelFileReader{}
)

// RegisterModelFile makes eval read JSON model files whose "kind" is kind
// with read. It panics on a second reader for one kind (a programming
// error, like RegisterPipeline's).
func RegisterModelFile(kind string, read ModelFileReader) {
	modelFileMu.Lock()
	defer modelFileMu.Unlock()
	if _, dup := modelFileReaders[kind]; dup {
		panic("trainer: model file kind " + kind + " registered twice")
	}
	modelFileReaders[kind] = read
}

// modelFileKinds are the kinds of JSON model file eval reads, sorted.
func modelFileKinds() []string {
	modelFileMu.RLock()
	defer modelFileMu.RUnlock()
	return slices.Sorted(maps.Keys(modelFileReaders))
}

// modelFileNames are the files a run directory's model may be in, in the
// order eval looks for them.
var modelFileNames = []string{modelFile, "model.json"}

// modelFileIn is path, or when path is a directory (a run's --out), the
// model file in it.
func modelFileIn(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return path, nil // opening it reports the error
	}
	for _, name := range modelFileNames {
		if _, err := os.Stat(filepath.Join(path, name)); err == nil {
			return filepath.Join(path, name), nil
		}
	}
	return "", fmt.Errorf("%s is a directory without a model file (%s)", path, strings.Join(modelFileNames, " or "))
}

// openSavedModel reads the model file path: a checkpoint, or a JSON model
// file of a registered kind.
func openSavedModel(path string) (*SavedModel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	if !bytes.HasPrefix(bytes.TrimLeft(head[:n], " \t\r\n"), []byte("{")) {
		return checkpointModel(path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	readable := fmt.Sprintf("eval reads fairdp checkpoints (model.ckpt) and the model.json of %s", strings.Join(modelFileKinds(), ", "))
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, fmt.Errorf("eval: %s is not a model file: %v; %s", path, err, readable)
	}
	modelFileMu.RLock()
	read := modelFileReaders[kind.Kind]
	modelFileMu.RUnlock()
	switch {
	case read != nil:
		return read(path, raw)
	case kind.Kind == "":
		return nil, fmt.Errorf("eval: %s is JSON without a %q: not a model file eval reads (a model.json written before fairdp "+
			"recorded its kind and split cannot be scored: retrain it); %s", path, modelFileKey, readable)
	default:
		return nil, fmt.Errorf("eval: %s is a model file of kind %q; %s", path, kind.Kind, readable)
	}
}

// checkpointModel reads the checkpoint path as a SavedModel.
func checkpointModel(path string) (*SavedModel, error) {
	m, meta, err := models.LoadFile(path)
	if err != nil {
		return nil, err
	}
	rec, err := ReadSplitRecord(meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sm := &SavedModel{Arch: meta.Spec.Arch, DType: meta.DType, Receipt: meta.Privacy, Split: rec, Preprocess: meta.Preprocess}
	switch mm := m.(type) {
	case *models.Model[float32]:
		sm.Params, sm.Score = mm.NumParams(), func(d *loaders.Dataset) (metrics.Split, error) { return Evaluate(mm, d) }
	case *models.Model[float64]:
		sm.Params, sm.Score = mm.NumParams(), func(d *loaders.Dataset) (metrics.Split, error) { return Evaluate(mm, d) }
	default:
		return nil, fmt.Errorf("%s: unsupported model type %T", path, m)
	}
	return sm, nil
}
