package trainer

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// The files of a checkpoint directory (CheckpointOptions.Dir).
const (
	// CheckpointFile is the run's state after its last completed epoch:
	// parameters, optimizer, algorithm and accountant state, the epoch
	// log, and for a seeded run the random streams. Mode 0600.
	CheckpointFile = "training.ckpt"
	// LedgerFile records, before an epoch's first step, that the epoch
	// started from the checkpoint's generation: a restart that finds an
	// epoch started but not checkpointed knows its steps ran.
	LedgerFile = "ledger.json"
	// LockFile is locked while a process trains the run (Unix), so that two
	// processes never continue one checkpoint at once.
	LockFile = "lock"
)

// checkpointMagic starts CheckpointFile; the version is the format's.
const checkpointMagic = "fairdp training checkpoint v1\n"

// CheckpointOptions make a run resumable (PrepareOptions.Checkpoint,
// PrivateOptions.Checkpoint).
type CheckpointOptions struct {
	// Dir holds the run's CheckpointFile and LedgerFile; it is created if
	// missing. Keep one directory per run.
	Dir string
	// Resume continues the run Dir holds, or starts it when Dir holds no
	// checkpoint yet, so that one command both starts and restarts a run.
	// Without Resume a Dir that holds a checkpoint is refused: a new run
	// never overwrites the record of what an earlier one spent.
	Resume bool
}

// Resumable is an Algorithm whose state between epochs a checkpoint can
// save and restore. Every algorithm that trains through Run with a
// checkpoint must implement it; the others are refused before training.
type Resumable interface {
	// SaveState puts into s everything the algorithm needs to continue
	// after the epoch just completed: its accountant, its random streams
	// (PutRand), anything its later steps or Finish read.
	SaveState(s *State) error
	// LoadState restores what SaveState put, into an algorithm built for
	// the same job.
	LoadState(s *State) error
	// ChargeLost charges the accountant for steps steps that ran in an
	// epoch that was interrupted before its checkpoint (the steps are run
	// again with fresh noise; see Prepare).
	ChargeLost(steps int) error
}

// State is the named state a Resumable algorithm saves into a checkpoint:
// values (gob-encoded) and random streams.
//
// Random streams are saved only for a seeded run, whose streams anyone who
// knows the seed can compute anyway. An unseeded run's checkpoint never
// holds a stream position (it would predict the noise of every later step);
// when it resumes, GetRand leaves each stream as the new process keyed it,
// from crypto/rand.
type State struct {
	seeded bool
	values map[string][]byte
}

// Seeded reports whether the run is seeded, so that its random streams are
// saved and restored.
func (s *State) Seeded() bool { return s.seeded }

// Put saves v (gob-encoded) under name.
func (s *State) Put(name string, v any) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return fmt.Errorf("checkpoint state %s: %w", name, err)
	}
	if s.values == nil {
		s.values = map[string][]byte{}
	}
	s.values[name] = buf.Bytes()
	return nil
}

// Get restores into v (a pointer) what Put saved under name.
func (s *State) Get(name string, v any) error {
	raw, ok := s.values[name]
	if !ok {
		return fmt.Errorf("checkpoint state %s is missing", name)
	}
	if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(v); err != nil {
		return fmt.Errorf("checkpoint state %s: %w", name, err)
	}
	return nil
}

// PutRand saves r's position under name when the run is seeded (see State).
func (s *State) PutRand(name string, r *rand.ChaCha8) error {
	if !s.seeded {
		return nil
	}
	b, err := r.MarshalBinary()
	if err != nil {
		return err
	}
	return s.Put(name, b)
}

// GetRand restores r's position when the run is seeded; an unseeded run
// keeps r as keyed by this process (see State).
func (s *State) GetRand(name string, r *rand.ChaCha8) error {
	if !s.seeded {
		return nil
	}
	var b []byte
	if err := s.Get(name, &b); err != nil {
		return err
	}
	return r.UnmarshalBinary(b)
}

// checkpointHeader is the part of CheckpointFile every element type shares.
type checkpointHeader struct {
	Version    string // fairdp version that wrote it
	Run        string // random id tying the ledger to this run
	Generation uint64 // incremented at every write
	Epoch      int    // completed epochs
	Config     []byte // JSON of the Config the run started with
	Algorithm  string
	Seeded     bool
	// DataKey is the key of the data-split stream of an unseeded run
	// without a split seed (see Prepare; the model.ckpt the
	// run writes records it too, SplitRecord); DataHash fingerprints both
	// splits.
	DataKey  []byte
	DataHash []byte
	Seconds  float64 // training time of all sessions up to Epoch
	// FirstLoss is the divergence check's first batch loss; saved only
	// when exact statistics may be released (else -1).
	FirstLoss float64
	Resumes   []int // epochs after which an unseeded run was resumed
	LostSteps int   // steps of interrupted epochs charged (unseeded runs)
	Logs      [][]byte
	Algo      map[string][]byte
	Sampler   []byte // seeded: the sampler's own state and its stream
	SamplerRN []byte
}

// checkpointBody is the part of CheckpointFile typed by the element type.
type checkpointBody[T nn.Float] struct {
	Params    [][]T
	Layers    [][]byte // state of layers with one (Dropout's generator), by layer
	Optimizer nn.OptimizerState[T]
}

// ledgerEntry is LedgerFile.
type ledgerEntry struct {
	Run        string `json:"run"`
	Generation uint64 `json:"generation"`
	Started    int    `json:"started_epoch"`
}

// checkpoint is a job's checkpoint directory and, when it resumes, what
// the directory held.
type checkpoint struct {
	dir    string
	head   *checkpointHeader // nil: a new run
	body   *gob.Decoder      // positioned at the body of head
	ledger *ledgerEntry      // nil: none
	// dataKey and dataHash are the new header's (see checkpointHeader).
	dataKey, dataHash []byte
	unlock            func() // releases the directory's lock
}

// prepareCheckpointedLocked is Prepare for a checkpointed run: it locks
// opts.Dir for the run and reads what it holds (Prepare's doc).
func prepareCheckpointedLocked(cfg Config, log io.Writer, opts CheckpointOptions) (*Job, error) {
	if opts.Dir == "" {
		return nil, errors.New("CheckpointOptions.Dir is empty")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkRegistered(cfg.Algo); err != nil {
		return nil, err
	}
	if cfg.Device != DeviceCPU {
		return nil, FieldErrors{{Field: "Device", Msg: fmt.Sprintf("%s runs cannot be checkpointed yet (their parameters and noise keys live on the device): train on cpu, or without a checkpoint", cfg.Device)}}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	job, err := prepareCheckpointed(cfg, log, opts)
	if err != nil {
		unlock()
		return nil, err
	}
	job.checkpoint.unlock = unlock
	return job, nil
}

// prepareCheckpointed is prepareCheckpointedLocked once the directory is locked.
func prepareCheckpointed(cfg Config, log io.Writer, opts CheckpointOptions) (*Job, error) {
	cfg, err := resolveTrainFrac(cfg, nil) // before comparing with the checkpoint's, which holds the resolved value
	if err != nil {
		return nil, err
	}
	ck, err := readCheckpoint(opts.Dir)
	if err != nil {
		return nil, err
	}
	if ck.head != nil {
		if !opts.Resume {
			return nil, FieldErrors{{Field: "CheckpointOptions.Resume", Msg: fmt.Sprintf("is needed to continue the run checkpointed in %s (after epoch %d); or give another directory",
				opts.Dir, ck.head.Epoch)}}
		}
		var saved Config
		if err := json.Unmarshal(ck.head.Config, &saved); err != nil {
			return nil, fmt.Errorf("%s: its config: %w", filepath.Join(opts.Dir, CheckpointFile), err)
		}
		if diff := configDiff(saved, cfg, opts.Dir); len(diff) > 0 {
			return nil, diff
		}
	}
	resuming := ck.head != nil
	// An unseeded run resumed gets new keys for everything but the split.
	r, src := dpops.NewRand(cfg.Seed)
	var key [32]byte // the key of the split's stream, as in Prepare
	switch {
	case cfg.SplitSeed != nil:
		_, split := dpops.NewRand(cfg.SplitSeed)
		key = split.DeriveKey("data")
	case cfg.Seed != nil:
		key = src.DeriveKey("data")
	default:
		key = src.DeriveKey("data") // what Prepare's split would use
		if resuming {
			if len(ck.head.DataKey) != len(key) {
				return nil, fmt.Errorf("%s: an unseeded run's checkpoint without its data-split key", opts.Dir)
			}
			copy(key[:], ck.head.DataKey)
		}
		ck.dataKey = key[:]
	}
	train, test, prep, err := LoadData(cfg, rand.New(rand.NewChaCha8(key)))
	if err != nil {
		return nil, err
	}
	ck.dataHash = dataFingerprint(train, test)
	if resuming && !bytes.Equal(ck.dataHash, ck.head.DataHash) {
		return nil, fmt.Errorf("%s: the data (%s, %d train / %d test records) differ from the data the checkpointed run trained on",
			opts.Dir, train.Name, train.N(), test.N())
	}
	return &Job{Cfg: cfg, Train: train, Test: test, Preprocess: prep, Rand: r, Source: src, Log: log, checkpoint: ck,
		split: NewSplitRecord(cfg, key, train, test)}, nil
}

// Resuming reports whether the job continues a checkpointed run, and after
// how many completed epochs.
func (j *Job) Resuming() (epoch int, ok bool) {
	if j.checkpoint == nil || j.checkpoint.head == nil {
		return 0, false
	}
	return j.checkpoint.head.Epoch, true
}

// Restored is the algorithm state of the checkpoint the job resumes (nil
// for a new run), for a constructor that must not redo a release the
// checkpoint already holds (DP-FERMI's noisy group counts). LoadState
// receives the same state once the algorithm is built.
func (j *Job) Restored() *State {
	if j.checkpoint == nil || j.checkpoint.head == nil {
		return nil
	}
	return &State{seeded: j.checkpoint.head.Seeded, values: j.checkpoint.head.Algo}
}

// readCheckpoint reads dir's checkpoint header and ledger (head nil when
// there is no checkpoint).
func readCheckpoint(dir string) (*checkpoint, error) {
	ck := &checkpoint{dir: dir}
	path := filepath.Join(dir, CheckpointFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ck, nil
	}
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(raw, []byte(checkpointMagic)) {
		return nil, fmt.Errorf("%s is not a fairdp training checkpoint (format v1)", path)
	}
	ck.body = gob.NewDecoder(bytes.NewReader(raw[len(checkpointMagic):]))
	ck.head = &checkpointHeader{}
	if err := ck.body.Decode(ck.head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lraw, err := os.ReadFile(filepath.Join(dir, LedgerFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		ck.ledger = &ledgerEntry{}
		if err := json.Unmarshal(lraw, ck.ledger); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, LedgerFile), err)
		}
		if ck.ledger.Run != ck.head.Run || ck.ledger.Generation > ck.head.Generation {
			return nil, fmt.Errorf("%s belongs to another run or a later checkpoint than %s (generation %d, checkpoint %d): the directory mixes two runs",
				LedgerFile, path, ck.ledger.Generation, ck.head.Generation)
		}
	}
	return ck, nil
}

// configDiff names every setting that differs between the checkpoint's
// config and now, apart from where outputs go and how much is printed.
func configDiff(saved, now Config, dir string) FieldErrors {
	var errs FieldErrors
	var walk func(prefix string, a, b reflect.Value)
	walk = func(prefix string, a, b reflect.Value) {
		for i := range a.NumField() {
			f := a.Type().Field(i)
			name := prefix + f.Name
			if !f.IsExported() { // Config's sections, compared below
				continue
			}
			switch name {
			case "Out", "Quiet", "DataDir", "Preset":
				continue
			}
			x, y := a.Field(i), b.Field(i)
			if f.Type.Kind() == reflect.Struct {
				walk(name+".", x, y)
				continue
			}
			if x.Kind() == reflect.Slice && x.Len() == 0 && y.Len() == 0 || reflect.DeepEqual(x.Interface(), y.Interface()) {
				continue
			}
			errs.Add(name, "is %s in the run checkpointed in %s and %s now: a resumed run must keep every setting that changes its training",
				showValue(x), dir, showValue(y))
		}
	}
	walk("", reflect.ValueOf(saved), reflect.ValueOf(now))
	// A section is its owner's settings, held as canonical JSON of its
	// type: equal settings are equal bytes.
	keys := slices.Sorted(maps.Keys(saved.sections))
	for k := range now.sections {
		if _, ok := saved.sections[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		x, y := saved.sections[k], now.sections[k]
		if !bytes.Equal(x, y) {
			errs.Add(k, "is %s in the run checkpointed in %s and %s now: a resumed run must keep every setting that changes its training",
				showSection(x), dir, showSection(y))
		}
	}
	return errs
}

// showSection is a section's JSON for a message ("none" when absent).
func showSection(raw []byte) string {
	if raw == nil {
		return "none"
	}
	return string(raw)
}

func showValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "unset"
		}
		v = v.Elem()
	}
	return fmt.Sprintf("%v", v.Interface())
}

// dataFingerprint is SHA-256 of both splits' records, labels and groups.
func dataFingerprint(sets ...*loaders.Dataset) []byte {
	h := sha256.New()
	w := bufio.NewWriter(h)
	for _, d := range sets {
		for _, v := range []any{int64(d.N()), int64(d.Dim), int64(d.C), int64(d.H), int64(d.W), d.Standardise,
			d.X, d.Pix, d.Mean, d.Std, d.Targets, ints64(d.Labels), ints64(d.Groups)} {
			binary.Write(w, binary.LittleEndian, v)
		}
	}
	w.Flush()
	return h.Sum(nil)
}

func ints64(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// resumer is Run's side of a checkpoint: it restores a run and saves it
// after every epoch.
type resumer[T nn.Float] struct {
	ck          *checkpoint
	job         *Job
	m           Model[T]
	opt         nn.StatefulOptimizer[T]
	sampler     dpops.Sampler
	samplerRand *rand.ChaCha8
	alg         Resumable
	algName     string
	head        checkpointHeader
	prior       float64 // seconds of earlier sessions
	session     time.Time
}

// newResumer is nil when the job has no checkpoint, and refuses a run
// whose state it cannot save.
func newResumer[T nn.Float](job *Job, m Model[T], opt nn.Optimizer[T], sampler dpops.Sampler, samplerRand *rand.ChaCha8, name string, hooks Hooks[T]) (*resumer[T], error) {
	if job.checkpoint == nil {
		return nil, nil
	}
	res := hooks.Resume
	if res == nil {
		return nil, fmt.Errorf("algorithm %s cannot be checkpointed: it does not implement trainer.Resumable (Hooks.Resume)", name)
	}
	if hooks.Resident != nil {
		return nil, errors.New("a device-resident run cannot be checkpointed yet")
	}
	so, ok := opt.(nn.StatefulOptimizer[T])
	if !ok {
		return nil, fmt.Errorf("the optimizer %T cannot be checkpointed", opt)
	}
	if _, ok := sampler.(interface {
		encoding.BinaryMarshaler
		encoding.BinaryUnmarshaler
	}); !ok {
		return nil, fmt.Errorf("algorithm %s's sampler %T cannot be checkpointed", name, sampler)
	}
	return &resumer[T]{ck: job.checkpoint, job: job, m: m, opt: so, sampler: sampler, samplerRand: samplerRand, alg: res,
		algName: name, session: time.Now()}, nil
}

// start restores the checkpointed run, or for a new run writes the state
// before the first epoch, and returns the number of epochs done. A run
// interrupted inside an epoch is charged for it here when unseeded.
func (r *resumer[T]) start(stepsPerEpoch int) (int, error) {
	if r.ck.head == nil {
		return 0, r.begin()
	}
	if err := r.restore(); err != nil {
		return 0, err
	}
	return r.head.Epoch, r.chargeInterrupted(stepsPerEpoch)
}

// begin writes a new run's checkpoint before its first epoch.
func (r *resumer[T]) begin() error {
	cfgJSON, err := json.Marshal(r.job.Cfg)
	if err != nil {
		return err
	}
	var id [8]byte
	_, _ = crand.Read(id[:])
	r.head = checkpointHeader{Version: Version, Run: hex.EncodeToString(id[:]), Config: cfgJSON,
		Algorithm: r.algName, Seeded: r.job.Source.Seeded, DataKey: r.ck.dataKey, DataHash: r.ck.dataHash}
	if r.head.Seeded {
		r.head.DataKey = nil
	}
	return r.save(0, nil, -1)
}

// restore puts the checkpoint's state into the model, optimizer, sampler
// and algorithm.
func (r *resumer[T]) restore() error {
	r.head = *r.ck.head
	h := &r.head
	path := filepath.Join(r.ck.dir, CheckpointFile)
	if r.algName != h.Algorithm {
		return fmt.Errorf("%s is of algorithm %s, this run is %s", path, h.Algorithm, r.algName)
	}
	if h.Seeded != r.job.Source.Seeded {
		return fmt.Errorf("%s: seeded %v, this run %v", path, h.Seeded, r.job.Source.Seeded)
	}
	var body checkpointBody[T]
	if err := r.ck.body.Decode(&body); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	params := r.m.Params()
	if len(body.Params) != len(params) {
		return fmt.Errorf("%s has %d parameter blocks, the model %d", path, len(body.Params), len(params))
	}
	for i, p := range params {
		if len(body.Params[i]) != len(p.Value) {
			return fmt.Errorf("%s: parameter block %d (%s) has %d values, the model %d", path, i, p.Name, len(body.Params[i]), len(p.Value))
		}
		copy(p.Value, body.Params[i])
	}
	if err := restoreModelState(r.m, body.Layers); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := r.opt.SetState(params, body.Optimizer); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if h.Seeded {
		if err := r.samplerRand.UnmarshalBinary(h.SamplerRN); err != nil {
			return fmt.Errorf("%s: sampler stream: %w", path, err)
		}
		if err := r.sampler.(encoding.BinaryUnmarshaler).UnmarshalBinary(h.Sampler); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := r.alg.LoadState(&State{seeded: h.Seeded, values: h.Algo}); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.prior = h.Seconds
	return nil
}

// chargeInterrupted says what the resume does and, for an unseeded run
// whose next epoch the ledger shows started, charges that epoch; an
// unseeded run's checkpoint is then rewritten (the charge and the resume
// on disk) before any step runs.
func (r *resumer[T]) chargeInterrupted(stepsPerEpoch int) error {
	h := &r.head
	log := r.job.Log // what a resume did is said even with Quiet
	say := func(format string, a ...any) {
		if log != nil {
			fmt.Fprintf(log, format+"\n", a...)
		}
	}
	say("resuming the run checkpointed in %s after epoch %d of %d", r.ck.dir, h.Epoch, r.job.Cfg.Epochs)
	if h.Epoch == r.job.Cfg.Epochs {
		return nil // finished: nothing more is drawn or charged
	}
	if !h.Seeded {
		h.Resumes = append(h.Resumes, h.Epoch)
		say("unseeded run: the batches and noise from here on are drawn from new crypto/rand keys")
	}
	if l := r.ck.ledger; l != nil && l.Generation == h.Generation && l.Started == h.Epoch+1 {
		if h.Seeded {
			say("epoch %d was interrupted; a seeded run redoes it with the same batches and noise, so nothing more is charged", l.Started)
		} else {
			if err := r.alg.ChargeLost(stepsPerEpoch); err != nil {
				return err
			}
			h.LostSteps += stepsPerEpoch
			say("epoch %d was interrupted: its %d steps are charged, and it is run again with fresh noise", l.Started, stepsPerEpoch)
		}
	}
	if h.Seeded {
		return nil
	}
	return r.save(h.Epoch, nil, h.FirstLoss)
}

// release releases the directory's lock (once; later calls do nothing).
func (ck *checkpoint) release() {
	if ck != nil && ck.unlock != nil {
		ck.unlock()
		ck.unlock = nil
	}
}

// firstLoss is the divergence check's saved first-batch loss (-1: none).
func (r *resumer[T]) firstLoss() float64 { return r.head.FirstLoss }

// logs are the metrics.jsonl lines of the completed epochs.
func (r *resumer[T]) logs() [][]byte { return r.head.Logs }

// startEpoch records in the ledger that epoch starts from the current
// checkpoint, unless ctx is done (a stop between epochs charges nothing).
func (r *resumer[T]) startEpoch(ctx context.Context, epoch int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return atomicfile.WriteJSON(filepath.Join(r.ck.dir, LedgerFile),
		ledgerEntry{Run: r.head.Run, Generation: r.head.Generation, Started: epoch})
}

// save writes the checkpoint after epoch (log: its metrics.jsonl line,
// nil for none; firstLoss -1 unless exact statistics may be kept).
func (r *resumer[T]) save(epoch int, log []byte, firstLoss float64) error {
	h := &r.head
	h.Epoch, h.FirstLoss, h.Generation = epoch, firstLoss, h.Generation+1
	h.Seconds = r.prior + time.Since(r.session).Seconds()
	if log != nil {
		h.Logs = append(h.Logs, log)
	}
	st := &State{seeded: h.Seeded}
	if err := r.alg.SaveState(st); err != nil {
		return err
	}
	h.Algo = st.values
	h.Sampler, h.SamplerRN = nil, nil
	if h.Seeded {
		var err error
		if h.Sampler, err = r.sampler.(encoding.BinaryMarshaler).MarshalBinary(); err != nil {
			return err
		}
		if h.SamplerRN, err = r.samplerRand.MarshalBinary(); err != nil {
			return err
		}
	}
	params := r.m.Params()
	body := checkpointBody[T]{Params: make([][]T, len(params)), Optimizer: r.opt.State(params)}
	for i, p := range params {
		body.Params[i] = p.Value
	}
	var err error
	if body.Layers, err = modelState(r.m); err != nil {
		return err
	}
	return atomicfile.WriteMode(filepath.Join(r.ck.dir, CheckpointFile), 0o600, func(w io.Writer) error {
		if _, err := io.WriteString(w, checkpointMagic); err != nil {
			return err
		}
		enc := gob.NewEncoder(w)
		if err := enc.Encode(h); err != nil {
			return err
		}
		return enc.Encode(&body)
	})
}

// noteReceipt adds to a private run's receipt what resuming changed.
func (r *resumer[T]) noteReceipt(rc *accounting.Receipt) {
	h := &r.head
	if len(h.Resumes) > 0 {
		rc.AddNote(fmt.Sprintf("resumed from a checkpoint after epoch(s) %s; the batches and noise after each resume were drawn from new crypto/rand keys (an unseeded checkpoint holds no random stream)",
			joinInts(h.Resumes)))
	}
	if h.LostSteps > 0 {
		rc.AddNote(fmt.Sprintf("%d steps of interrupted epochs are charged in the ε above although their results were lost: the epochs were run again with fresh noise",
			h.LostSteps))
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// binaryState is a layer or model with state outside its parameters.
type binaryState interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// modelState saves the state m keeps outside its parameters: that of each
// layer of a *models.Model that has one (Dropout's generator), or of a
// model of one's own that implements encoding.BinaryMarshaler.
func modelState[T nn.Float](m Model[T]) ([][]byte, error) {
	parts := stateParts(m)
	out := make([][]byte, len(parts))
	for i, p := range parts {
		if s, ok := p.(binaryState); ok {
			b, err := s.MarshalBinary()
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	}
	return out, nil
}

// restoreModelState restores what modelState saved.
func restoreModelState[T nn.Float](m Model[T], saved [][]byte) error {
	parts := stateParts(m)
	if len(saved) != len(parts) {
		return fmt.Errorf("model state of %d layers, the model has %d", len(saved), len(parts))
	}
	for i, p := range parts {
		if s, ok := p.(binaryState); ok {
			if err := s.UnmarshalBinary(saved[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// stateParts are the parts of m that may keep state: the layers of a
// *models.Model, else m itself.
func stateParts[T nn.Float](m Model[T]) []any {
	mm, ok := m.(*models.Model[T])
	if !ok {
		return []any{m}
	}
	parts := make([]any, len(mm.Layers))
	for i, l := range mm.Layers {
		parts[i] = l
	}
	return parts
}

// keepFirstLoss is the divergence check's first loss as a checkpoint may
// hold it: an exact statistic of the training data, kept only when such
// statistics may be released.
func keepFirstLoss(firstLoss float64, exact bool) float64 {
	if !exact || math.IsNaN(firstLoss) {
		return -1
	}
	return firstLoss
}
