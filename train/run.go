// Package train runs the training loop: one static graph, compiled once,
// fed a batch per step, its gradients clipped and applied by AdamW, with
// evaluation, metrics, checkpoints and resume.
package train

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/internal/runlock"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/nanogpt"
	"github.com/gptg/gptg/recipe"
	"github.com/gptg/gptg/savedmodel"
)

// ErrInterrupted is returned when a signal stopped training after a
// checkpoint was written; the caller exits 130.
var ErrInterrupted = errors.New("training interrupted")

// Options are the parts of a run that are not in the config.
type Options struct {
	Log      io.Writer // progress and messages (os.Stdout)
	Progress bool      // a live progress bar instead of periodic lines
	Force    bool      // start over in a run folder that holds a run
	// Replacing, with Force, is the Mark the folder must still have to be
	// started over: a runner that looked at it earlier (ablate --force)
	// leaves a run that another runner trained since as it is.
	Replacing string
	Client    *http.Client // for downloading the corpus; nil = http.DefaultClient
	// CheckpointEvery, when set, replaces the config's train.checkpoint_every.
	CheckpointEvery int
	// AfterStep, when set, is called after every step (tests interrupt here).
	AfterStep func(step int)
	// Backend says how the graphs compute (fused or not); see graph.Backend.
	Backend graph.Backend
	// Init, when set, is a model file whose weights a new run starts from
	// instead of its seed's initialisation (fine-tuning; Run only).
	Init string
	// beforeEval, when set, is called before each evaluation (tests
	// interrupt an evaluation here).
	beforeEval func(step int)
	// lock is the run folder's lock, checked before every write into the
	// folder (stillLocked).
	lock *runlock.Lock
	// Comm, for --distributed, is the job's ranks: each takes its share of
	// every step's batches, and only rank 0 writes (distributed.go).
	Comm Comm
	// RanksLost, for --distributed, is told rank 0's line when the job is
	// stopped while rank 0 waits for ranks that are gone; it ends the
	// process (the main goroutine is blocked in MPI).
	RanksLost func(msg string)
}

// stillLocked refuses to write into dir once its lock file is no longer
// the one this process locked: another gptg may be training there now.
func (o Options) stillLocked(dir string, step int) error {
	if err := o.lock.Intact(); err != nil {
		return fmt.Errorf("%w: another gptg may now be writing into %s, so this run stopped at step %d without writing; when no other gptg uses the folder, go on with gptg train --resume %s",
			err, dir, step, dir)
	}
	return nil
}

// Result summarises a finished run.
type Result struct {
	Dir          string
	Steps        int
	TrainLoss    float64 // mean loss over the last logged interval
	TestLoss     float64
	TestBatch    int     // number of test batches the loss averages
	TrainSecs    float64 // training time, evaluation excluded
	TokensPerSec float64
	// Threads is the number of goroutines the graphs computed on: the
	// command line's --threads, else train.threads, else every core.
	Threads int
}

// File names inside a run folder.
const (
	ConfigFile     = "config.toml"
	ModelFile      = "model.safetensors"
	MetricsFile    = "metrics.jsonl"
	CheckpointFile = "checkpoint.safetensors"
)

// Run trains cfg from scratch into cfg.Train.Out. It holds the run
// folder's lock (internal/runlock) from the moment the folder exists until
// it returns, so a second gptg cannot write into the same folder.
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	if err := distributedModel(cfg, opts); err != nil {
		return nil, err
	}
	if cfg.Model.EncoderDecoder() {
		return runTranslation(ctx, cfg, opts)
	}
	if follower(opts) {
		return runFollower(ctx, cfg, opts)
	}
	dir := cfg.Train.Out
	if msg := checkRunFolder(dir); msg != "" {
		// Exit code 2, like any bad setting, naming where train.out came from.
		return nil, &config.Error{File: cfg.Path, Key: "train.out", Msg: msg}
	}
	// An existing folder is locked before anything else, so that a second
	// process learns at once that the folder is busy.
	// Checked first without the lock, so that a refusal leaves no lock
	// file behind, and again once the lock is held; a folder in use says
	// so before anything else.
	if err := runlock.Busy(dir); err != nil {
		return nil, err
	}
	if err := refuseExistingRun(dir, opts); err != nil {
		return nil, err
	}
	var lock *runlock.Lock
	if _, err := os.Stat(dir); err == nil {
		if lock, err = runlock.Acquire(dir); err != nil {
			return nil, err
		}
		defer lock.Release()
		if err := refuseExistingRun(dir, opts); err != nil {
			return nil, err
		}
	}
	t, err := newTrainer(ctx, cfg, cfg.Data.Path, cfg.Data.ValPath, opts)
	if err != nil {
		return nil, err
	}
	defer t.close()
	// --init is checked before the folder is made or --force removes
	// anything: a model file of another shape leaves the old run as it was.
	if opts.Init != "" {
		if err := t.initFrom(opts.Init); err != nil {
			return nil, err
		}
	}
	if err := t.agree(); err != nil { // before the folder is made
		return nil, err
	}
	// The run's record of its corpus (corpus.go): its content, checked
	// whenever the run is resumed or evaluated, and where it was.
	if cfg.Data.SHA256 == "" {
		cfg.Data.SHA256 = t.data.SHA256
	}
	if cfg.Data.Size == 0 {
		cfg.Data.Size = t.data.Size
	}
	if cfg.Data.Format == config.FormatTokens {
		if cfg.Data.ValSHA256 == "" {
			cfg.Data.ValSHA256 = t.data.ValSHA256
		}
		if cfg.Data.ValSize == 0 {
			cfg.Data.ValSize = t.data.ValSize
		}
	}
	t.origin = newOrigin(cfg.Data, cfg.Path, dir)
	if lock == nil { // a new folder: made only now that the run can start
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating run folder: %w", err)
		}
		if lock, err = runlock.Acquire(dir); err != nil {
			return nil, err
		}
		defer lock.Release()
		// Another process may have made the folder since the Stat above.
		if err := refuseExistingRun(dir, opts); err != nil {
			return nil, err
		}
	}
	if err := startOver(dir); err != nil {
		return nil, err
	}
	t.runID, t.opts.lock = newRunID(), lock
	if err := t.writeConfig(); err != nil {
		return nil, err
	}
	if err := t.metrics.reset(0, 0, t.opts.Log); err != nil {
		return nil, err
	}
	return t.loop(ctx)
}

// runFiles are the files that make a folder a gptg run folder: any one of
// them means a run is there.
var runFiles = []string{ConfigFile, ModelFile, MetricsFile, CheckpointFile}

// startOver removes the files of the run in dir (its lock held): the old
// run's files must not survive beside the new run's, where a resume would
// mix them. A link among them goes, not the file it names.
func startOver(dir string) error {
	for _, name := range runFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("starting over in %s: %w", dir, err)
		}
	}
	removeStaleTemps(dir)
	return nil
}

// ownFiles refuses a run whose files are symbolic links: a resume reads
// the run from where they lead, then rewrites every one of them in its
// folder (never through a link: atomicfile.WriteOwn), which would replace
// the link and leave the file it named behind, no longer the run's.
func ownFiles(dir string) error {
	for _, name := range runFiles {
		p := filepath.Join(dir, name)
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		to, _ := os.Readlink(p)
		return fmt.Errorf("%s is a symbolic link (to %s): a resume rewrites the run's files in its folder, which would replace the link and leave %s behind; put the file itself in the run folder (cp --remove-destination %s %s)",
			quote.Name(p), quote.Name(to), quote.Name(to), quote.Name(to), quote.Name(p))
	}
	return nil
}

// removeStaleTemps deletes the temporary files that atomicfile leaves
// beside a run's files when a process is killed mid-write (SIGKILL, power
// loss): with the run's lock held none is being written, and a checkpoint's
// can be as large as the model's state, once per kill.
func removeStaleTemps(dir string) {
	for _, name := range runFiles {
		stale, _ := filepath.Glob(filepath.Join(dir, "."+name+".tmp*"))
		for _, p := range stale {
			if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
				os.Remove(p)
			}
		}
	}
}

// ErrReplaced is wrapped by a start over refused because the run folder's
// run is no longer the one Options.Replacing names.
var ErrReplaced = errors.New("another process has trained in the run folder since")

// Mark says which run dir holds and how far it has come: its run id
// ("-" for none) and its checkpoint's step, as "ID@STEP".
func Mark(dir string) string {
	text, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	id := readRunID(text)
	if id == "" {
		id = "-"
	}
	step, _, _ := Progress(dir)
	return fmt.Sprintf("%s@%d", id, step)
}

// ExistingRunError is a train.out that already holds a run, refused
// unless --force: the command line's mistake, not a failure (exit 2).
type ExistingRunError struct{ msg string }

func (e *ExistingRunError) Error() string { return e.msg }

// CheckExistingRun is Run's refusal of a folder that already holds a run,
// for a caller that wants it before saying what it will train: in Run's
// order, so that a folder another gptg is training in says so first (a
// sweep's second task must learn that the run is busy, not that it was
// replaced).
func CheckExistingRun(dir string, opts Options) error {
	if err := runlock.Busy(dir); err != nil {
		return err
	}
	return refuseExistingRun(dir, opts)
}

// refuseExistingRun says how to go on when dir already holds a run,
// naming a command that works for the state the run is in.
func refuseExistingRun(dir string, opts Options) error {
	if opts.Force {
		if now := Mark(dir); opts.Replacing != "" && now != opts.Replacing {
			return fmt.Errorf("run folder %s: %w (it holds %s, --replacing names %s): left as it is", dir, ErrReplaced, now, opts.Replacing)
		}
		return nil
	}
	var found []string
	for _, name := range runFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return nil
	}
	step, total, err := Progress(dir)
	switch {
	case err != nil: // no usable checkpoint: nothing to resume
		return &ExistingRunError{fmt.Sprintf("run folder %s already holds a run (%s) without a checkpoint to resume: start over with --force, or choose another train.out",
			dir, strings.Join(found, ", "))}
	case step >= total:
		return &ExistingRunError{fmt.Sprintf("run folder %s already holds a finished run (%d steps): train it longer with `gptg train --resume %s --set train.max_steps=%d`, or start over with --force",
			dir, total, dir, 2*total)}
	}
	return &ExistingRunError{fmt.Sprintf("run folder %s already holds a run (at step %d of %d): continue it with `gptg train --resume %s`, or start over with --force",
		dir, step, total, dir)}
}

// checkRunFolder refuses a train.out that is a filesystem root, a file, or
// a non-empty folder that is not a gptg run folder: --force there would
// delete nothing of value, but the run's files would land among someone
// else's.
func checkRunFolder(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real // a link to / is / (and a link to a folder is that folder)
	}
	if filepath.Dir(abs) == abs {
		return dir + " is the filesystem root: choose a folder for the run, such as runs/NAME"
	}
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return fmt.Sprintf("%s: %v", dir, err)
	case !info.IsDir():
		return dir + " is a file, not a folder"
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1000) // enough to tell; a home folder may hold millions
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	for _, n := range names {
		if slices.Contains(runFiles, n) || n == runlock.Name {
			return ""
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		return fmt.Sprintf("%s is a folder that is not a gptg run folder and not empty (it holds %s): choose another train.out",
			dir, listSome(names, 3))
	}
	return ""
}

// listSome lists the first n names and how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// newRunID is a random name for one run, recorded in its config.toml and
// its checkpoints so that a resume notices a checkpoint of another run.
func newRunID() string {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a clock reading still tells runs apart.
		return fmt.Sprintf("t%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// runIDPrefix starts the comment line of config.toml that holds the run id.
const runIDPrefix = "# run id: "

// writeConfig writes the run's resolved config, with its run id, as
// config.toml.
// exampleLine is config.toml's example line of the run ("" for none).
func (t *trainer) exampleLine() string {
	if t.cfg.Model.EncoderDecoder() {
		return exampleHeader(t.example, "the training pairs")
	}
	return exampleHeader(t.example, "the training text")
}

func (t *trainer) writeConfig() error {
	text, err := t.cfg.TOML()
	if err != nil {
		return err
	}
	if t.cfg.Extends != "" {
		t.parentLine = parentHeader(t.cfg)
	}
	head := runIDPrefix + t.runID + " (gptg train --resume checks that the checkpoint belongs to this run)\n" + t.origin.header() + t.parentLine + t.exampleLine()
	text = append([]byte(head), text...)
	// Named by the run, not the user: a link there is replaced, not
	// written through (atomicfile.WriteOwn).
	return atomicfile.WriteOwnFile(filepath.Join(t.dir, ConfigFile), text)
}

// readRunID finds the run id line in a config.toml's text ("" if none:
// a folder written before run ids, or a hand-made one).
func readRunID(text []byte) string {
	for line := range strings.Lines(string(text)) {
		if id, ok := strings.CutPrefix(line, runIDPrefix); ok {
			id, _, _ = strings.Cut(id, " ")
			return strings.TrimSpace(id)
		}
		if !strings.HasPrefix(line, "#") {
			break
		}
	}
	return ""
}

// LengthKeys are the settings --resume may change about the run: how long
// it goes on. Anything else would make the resumed run a different one.
var LengthKeys = []string{"train.epochs", "train.max_steps"}

// machineKeys are settings of the machine, not of the run: --resume may
// change them too, and an edit of them in config.toml is no edit of the run.
var machineKeys = []string{"train.threads", "train.max_memory"}

// Resume continues the run in dir from its checkpoint. The result is the
// same, timings aside, as if the run had never stopped. sets may change
// the run's length only (LengthKeys, as "train.max_steps=N"): the
// learning-rate schedule is then recomputed for the new length.
func Resume(ctx context.Context, dir string, sets []string, opts Options) (*Result, error) {
	for _, s := range sets {
		key, _, _ := strings.Cut(s, "=")
		if key = strings.TrimSpace(key); !slices.Contains(LengthKeys, key) && !slices.Contains(machineKeys, key) {
			return nil, &config.Error{File: "--set", Key: key, Msg: fmt.Sprintf(
				"--resume changes only the run's length (%s) and the machine's %s; to change anything else, start a new run from its config: gptg train %s --set %s --set train.out=NEW_FOLDER",
				strings.Join(LengthKeys, ", "), strings.Join(machineKeys, ", "), filepath.Join(dir, ConfigFile), s)}
		}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("resuming %s: no such run folder", dir)
	}
	if !follower(opts) { // rank 0 of a distributed run, or the one process
		lock, err := runlock.Acquire(dir)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
		if err := ownFiles(dir); err != nil {
			return nil, err
		}
		removeStaleTemps(dir)
		opts.lock = lock
	}
	path := filepath.Join(dir, ConfigFile)
	text, err := inputfile.ReadFile(path, config.MaxConfigSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resuming %s: it has no %s, so it is not a run folder (or the run never started)", dir, ConfigFile)
	}
	cfg, err := config.Load(path, lengthSets(sets))
	if err == nil {
		err = cfg.CheckTrainMemory()
	}
	if err != nil {
		return nil, fmt.Errorf("resuming %s: %w", dir, err)
	}
	cfg.Train.Out = dir
	if err := distributedModel(cfg, opts); err != nil {
		return nil, err
	}
	if cfg.Model.EncoderDecoder() {
		return resumeTranslation(ctx, dir, cfg, text, sets, opts)
	}
	// The corpus, from wherever gptg runs, and only if it is the one the
	// run was trained on.
	origin := readOrigin(text)
	data, err := findCorpus(dir, cfg.Data, origin)
	if err != nil {
		return nil, err // it names the run
	}
	origin.setFile(data, dir)
	val, err := findValidation(dir, cfg.Data, origin)
	if err != nil {
		return nil, err
	}
	origin.setValFile(val, dir)
	t, err := newTrainer(ctx, cfg, data, val, opts)
	var vm *corpus.VocabMismatchError
	if errors.As(err, &vm) {
		return nil, fmt.Errorf("resuming %s: the model was trained on %d distinct %s tokens, and %s now has %d: the corpus changed since the run started, or data.path in %s was edited. A resumed run must read the data it started with: put it back, or start a new run with gptg train %s --set train.out=NEW_FOLDER",
			dir, vm.Vocab, vm.Tokenizer, vm.Path, vm.Data, path, path)
	}
	if err != nil {
		return nil, err
	}
	defer t.close()
	t.origin = origin
	t.runID = readRunID(text)
	t.parentLine = readParentLine(text)
	if err := t.loadCheckpoint(); err != nil {
		return nil, err
	}
	if err := t.agree(); err != nil {
		return nil, err
	}
	if t.step >= t.total && t.pending == nil {
		if !ModelBehind(dir) || t.follower() {
			return nil, fmt.Errorf("run %s already finished its %d steps: train it longer with `gptg train --resume %s --set train.max_steps=%d` (or train.epochs)",
				dir, t.total, dir, 2*t.total)
		}
		if err := savedmodel.Save(filepath.Join(dir, ModelFile), t.cfg.Model, t.data.Vocab, t.prog.Params); err != nil {
			return nil, fmt.Errorf("saving the model: %w", err)
		}
		fmt.Fprintf(t.opts.Log, "run %s had finished its %d steps, but its %s was missing or older than its checkpoint (killed while writing it): written from the checkpoint\n", dir, t.total, ModelFile)
		return t.result(), nil
	}
	if len(sets) > 0 && !t.follower() { // the new length goes on record for the next resume
		if err := t.writeConfig(); err != nil {
			return nil, err
		}
	}
	if t.savedTotal != t.total {
		fmt.Fprintf(t.opts.Log, "resuming %s at step %d, extended from %d to %d steps (learning-rate schedule recomputed for %d steps)\n",
			dir, t.step, t.savedTotal, t.total, t.total)
	} else {
		fmt.Fprintf(t.opts.Log, "resuming %s at step %d of %d\n", dir, t.step, t.total)
	}
	return t.loop(ctx)
}

// ModelBehind says dir's model file is missing or older than its
// checkpoint: saveAll writes the checkpoint first, so a run killed between
// the two (the OOM killer, a power cut) at its last save has a model that
// no later save brings level.
func ModelBehind(dir string) bool {
	m, err := os.Stat(filepath.Join(dir, ModelFile))
	if err != nil {
		return true
	}
	c, err := os.Stat(filepath.Join(dir, CheckpointFile))
	return err == nil && m.ModTime().Before(c.ModTime())
}

// RunLength is the number of steps a run takes: train.max_steps when it is
// set, as nanoGPT's max_iters (the epochs then only say how the data is
// ordered), else train.epochs passes of perEpoch steps.
func RunLength(tr config.Train, perEpoch int) int {
	if tr.MaxSteps > 0 {
		return tr.MaxSteps
	}
	return int(float64(perEpoch) * tr.Epochs)
}

// lengthSets makes "--set train.epochs=E" on its own mean what it says:
// a max_steps recorded in the run would otherwise decide the length, so it
// is cleared unless the same command sets it too.
func lengthSets(sets []string) []string {
	var epochs, steps bool
	for _, s := range sets {
		key, _, _ := strings.Cut(s, "=")
		epochs = epochs || strings.TrimSpace(key) == "train.epochs"
		steps = steps || strings.TrimSpace(key) == "train.max_steps"
	}
	if epochs && !steps {
		return append(slices.Clone(sets), "train.max_steps=0")
	}
	return sets
}

// trainer is one training run's state.
type trainer struct {
	cfg     *config.Config
	opts    Options
	dir     string
	data    *corpus.Dataset
	prog    *tape.Program // training graph with gradients
	tests   eval.Graphs   // the same model without gradients, for test loss
	opt     *AdamW
	stepper *Stepper
	metrics *metricsLog

	runID      string       // this run's identity (newRunID), "" for runs older than run ids
	origin     corpusOrigin // where the corpus and the config were (config.toml's hints)
	parentLine string       // config.toml's line of the config it extends (parentHeader), kept by a resume
	example    string       // the run's example (exampleSentence, exampleText) for gptg serve
	savedTotal int          // the length the checkpoint resumed from planned
	savedStep  int          // step of the newest checkpoint in the folder, -1 if none

	// pending is a metrics row whose evaluation has not finished yet: an
	// interrupt during an evaluation saves it in the checkpoint, and the
	// resumed run evaluates and writes it first.
	pending     *MetricsRow
	pendingEval bool

	perEpoch, total int
	threads         int       // the goroutines the graphs compute on (threads)
	step            int       // steps done
	trainSecs       float64   // training time up to the clock's last pause, earlier processes' included
	segment         time.Time // when the training clock last started (startClock)
	lossSum         float64   // since the last metrics row
	lossCount       int
	lastGradNorm    float64
	lastTrainLoss   float64
	lastTest        float64

	x, y  []int // batch buffers
	order []int // this epoch's window order
	epoch int   // epoch whose order is in order
}

// newTrainer loads the corpus from dataPath (cfg's data.path, or where a
// resumed run found it: FindCorpus) and, for token files, valPath (cfg's
// data.val_path, or where it was found: FindValidation), and builds the
// graphs. Its steps, in
// order: the corpus and the vocabulary it gives the model, the run's
// length, the graphs, the optimizer.
func newTrainer(ctx context.Context, cfg *config.Config, dataPath, valPath string, opts Options) (*trainer, error) {
	opts = withDefaults(opts, cfg.Train)
	data, err := loadCorpus(ctx, cfg, dataPath, valPath, opts)
	if err != nil {
		return nil, err
	}
	example, err := exampleText(data)
	if err != nil {
		data.Close()
		return nil, err
	}
	t := &trainer{cfg: cfg, opts: opts, dir: cfg.Train.Out, data: data, epoch: -1, savedStep: -1, example: example}
	if err := t.planLength(); err != nil {
		data.Close()
		return nil, err
	}
	// Again now that the vocabulary and the corpus are known: they size the
	// embedding, the output layer, the logits, and what the corpus holds.
	if err := cfg.CheckTrainMemoryOn(data.Memory()); err != nil {
		data.Close()
		return nil, err
	}
	be := threads(opts.Backend, cfg.Train)
	t.threads = be.Threads
	if err := t.compileGraphs(be); err != nil {
		data.Close()
		return nil, err
	}
	t.newStepper()
	n := t.windowsPerStep() * cfg.Model.Context
	t.x, t.y = make([]int, n), make([]int, n)
	t.metrics = &metricsLog{path: filepath.Join(t.dir, MetricsFile)}
	return t, nil
}

// withDefaults fills in what opts leaves unset: no log, and the config's
// checkpoint interval (1000 for a Config built in code, not loaded).
func withDefaults(opts Options, tr config.Train) Options {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = tr.CheckpointEvery
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = 1000
	}
	return opts
}

// loadCorpus reads (or downloads, or prepares) the corpus at dataPath
// (and valPath) and sets the model's vocabulary from it. An interrupt
// while it loads is ErrInterrupted: nothing has been written yet.
func loadCorpus(ctx context.Context, cfg *config.Config, dataPath, valPath string, opts Options) (*corpus.Dataset, error) {
	from := *cfg
	from.Data.Path, from.Data.ValPath = dataPath, valPath
	if err := recipe.EnsureFiles(from.Data, opts.Log); err != nil {
		return nil, err
	}
	var data *corpus.Dataset
	var err error
	if from.Data.Format == config.FormatTokens {
		data, err = nanogpt.LoadData(ctx, from, opts.Log, opts.Client)
	} else {
		var vocab *corpus.Vocab
		if vocab, err = initBPE(cfg, opts.Init); err != nil {
			return nil, err
		}
		data, err = corpus.LoadForVocab(ctx, from, vocab, opts.Log, opts.Client)
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w while loading %s: nothing was written", ErrInterrupted, dataPath)
	}
	if err != nil {
		return nil, err
	}
	if opts.Init != "" {
		err = checkInitVocab(opts.Init, cfg, data)
	}
	if err == nil {
		cfg.Model.Vocab, err = corpus.ModelVocab(*cfg, data)
	}
	if err != nil {
		data.Close()
		return nil, err
	}
	return data, nil
}

// windowsPerStep is how many context windows one step consumes:
// grad_accum batches of them.
func (t *trainer) windowsPerStep() int {
	return t.cfg.Train.Batch * max(1, t.cfg.Train.GradAccum)
}

// planLength sets the steps per epoch and the run's length, refusing a
// corpus too small for one step or one test batch now, not when the first
// evaluation finds it after hours.
func (t *trainer) planLength() error {
	d, tr, data := t.cfg.Data, t.cfg.Train, t.data
	perStep := t.windowsPerStep()
	if d.Sampling == "random" {
		// An epoch is as many tokens as the training split holds.
		t.perEpoch = data.TrainTokens() / (perStep * t.cfg.Model.Context)
		if data.TrainTokens() <= t.cfg.Model.Context {
			return fmt.Errorf("%s has a training split of %d tokens, not more than context %d", d.Path, data.TrainTokens(), t.cfg.Model.Context)
		}
		t.perEpoch = max(1, t.perEpoch)
	} else if t.perEpoch = data.NumTrain() / perStep; t.perEpoch == 0 {
		return fmt.Errorf("%s has %d training windows, fewer than one step's %d (train.batch × train.grad_accum)", d.Path, data.NumTrain(), perStep)
	}
	if data.TestBatches(tr.Batch) == 0 {
		return fmt.Errorf("%s has %d test windows, fewer than one batch of %d: lower train.batch or data.split",
			d.Path, data.NumTest(), tr.Batch)
	}
	t.total = RunLength(tr, t.perEpoch)
	if t.total < 1 {
		return fmt.Errorf("train.epochs = %v gives no step (%d steps per epoch)", tr.Epochs, t.perEpoch)
	}
	return nil
}

// threads is the backend with its thread count settled: the command
// line's, else the config's, else every core.
func threads(be graph.Backend, tr config.Train) graph.Backend {
	if be.Threads == 0 {
		be.Threads = tr.Threads
	}
	if be.Threads == 0 {
		be.Threads = runtime.GOMAXPROCS(0)
	}
	return be
}

// compileGraphs builds the training step's graph and the evaluation
// graphs. Training and evaluation never run at once: one Memory serves
// both, so evaluation costs no memory beyond the training step's.
func (t *trainer) compileGraphs(be graph.Backend) error {
	cfg, tr := t.cfg, t.cfg.Train
	mem := fused.NewMemory()
	// The training step: one graph, or shards of the batch side by side
	// (tape.CompileTraining).
	var err error
	if t.prog, err = tape.CompileTraining(cfg.Model, graph.Options{Batch: tr.Batch, Loss: true, Seed: tr.Seed, Dropout: true, Memory: mem, Backend: be}); err != nil {
		return err
	}
	// The evaluation graphs: one at the training batch, which the test
	// loss is defined over, and one at a multiple of it that covers
	// several batches per run where that is faster (config's EvalBatch,
	// eval.Graphs).
	if t.tests.Batch, err = t.evalGraph(tr.Batch, mem, be); err != nil {
		return err
	}
	if e := cfg.Model.EvalBatch(tr.Batch, t.testBatches()); e > tr.Batch {
		if t.tests.Chunk, err = t.evalGraph(e, mem, be); err != nil {
			return err
		}
	}
	return nil
}

// evalGraph compiles the model without gradients at batch size batch. It
// reads the training graph's parameter tensors themselves, so it always
// sees the current weights without copying.
func (t *trainer) evalGraph(batch int, mem *fused.Memory, be graph.Backend) (*tape.Program, error) {
	em, err := graph.Build(t.cfg.Model, graph.Options{Batch: batch, Loss: true, Seed: t.cfg.Train.Seed, Memory: mem, Backend: be})
	if err != nil {
		return nil, err
	}
	for i, p := range em.Params {
		if err := G.Let(p.Node, t.prog.Model.Params[i].Value()); err != nil {
			return nil, fmt.Errorf("sharing %s with the evaluation graph: %w", p.Name, err)
		}
	}
	return tape.Compile(em, false)
}

// newStepper sets up AdamW, the learning-rate schedule over the run's
// length and the Stepper that applies them after each step's gradients.
func (t *trainer) newStepper() {
	tr := t.cfg.Train
	t.opt = &AdamW{Beta1: tr.Beta1, Beta2: tr.Beta2, Eps: tr.Eps, WeightDecay: tr.WeightDecay}
	if tr.Decay == "matrices" {
		t.opt.SkipDecay = SkipDecayBelow2D(t.prog.Model.Params)
	}
	sched := Schedule{Kind: tr.Schedule, LR: tr.LR, MinLR: tr.MinLR, Warmup: tr.Warmup, Total: t.total, Dim: t.cfg.Model.Embedding}
	t.stepper = NewStepper(t.prog, t.opt, sched, tr.Clip)
	t.stepper.Accum, t.stepper.Seed = max(1, tr.GradAccum), tr.Seed
	t.stepper.Comm = t.opts.Comm
}

func (t *trainer) close() {
	t.prog.Close()
	t.tests.Close()
	t.metrics.close()
	t.data.Close()
}

// Salts that keep the random streams drawn from the seed apart: the
// windows of data.sampling = "random", and the test batches of
// train.eval_batches. (Epoch orders use (seed, epoch), dropout masks
// graph.Model.SetDropout's (seed, pass).)
const (
	saltRandomBatches = 0x72616e646f6d // "random"
	saltEvalBatches   = 0x6576616c     // "eval"
)

// batch fills t.x and t.y with the windows of step s. With data.sampling
// "windows", epoch s/perEpoch visits the training windows in an order
// drawn from (seed, epoch) alone; with "random", the windows start at
// offsets drawn from (seed, s). Either way a resumed run needs only its
// step to find its place.
func (t *trainer) batch(s int) error {
	B := t.cfg.Train.Batch * max(1, t.cfg.Train.GradAccum)
	if t.cfg.Data.Sampling == "random" {
		rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed)^saltRandomBatches, uint64(s)))
		return t.data.RandomBatch(t.x, t.y, false, rng)
	}
	if e := s / t.perEpoch; e != t.epoch {
		rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed), uint64(e)))
		t.order = rng.Perm(t.data.NumTrain())
		t.epoch = e
	}
	i := s % t.perEpoch
	return t.data.TrainBatch(t.x, t.y, t.order[i*B:(i+1)*B])
}

// testBatches is the number of batches a test loss averages.
func (t *trainer) testBatches() int {
	if n := t.cfg.Train.EvalBatches; n > 0 {
		return n
	}
	return t.data.TestBatches(t.cfg.Train.Batch)
}

// testLoss is the seed's test loss of the current weights, over the whole
// test split, or with train.eval_batches = N over N batches at random
// offsets of it drawn from (seed, step), as nanoGPT's estimate_loss. It
// stops early with ctx's error when ctx is done.
func (t *trainer) testLoss(ctx context.Context) (float64, int, error) {
	n := t.cfg.Train.EvalBatches
	if n == 0 {
		return t.tests.TestLoss(ctx, t.data, nil)
	}
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Train.Seed)^saltEvalBatches, uint64(t.step)))
	loss, err := t.tests.RandomTestLoss(ctx, t.data, n, rng)
	if err != nil {
		return 0, 0, err
	}
	return loss, n, nil
}

// loop trains from t.step to t.total. Each turn: stop and save if ctx is
// done; take a step; when a metrics row is due, evaluate (if due) and
// write it. A row whose evaluation an interrupt cut short stays pending:
// it is saved in the checkpoint and is the resumed run's first turn.
func (t *trainer) loop(ctx context.Context) (*Result, error) {
	t.stepper.Stop = func() bool { return ctx.Err() != nil }
	t.watchRanks(ctx)
	bar := newProgress(t.opts, t.total, t.step)
	defer bar.finish()
	t.startClock()
	for t.step < t.total || t.pending != nil {
		if t.stopNow(ctx) {
			return nil, t.stopInterrupted(bar)
		}
		if t.pending == nil {
			if err := t.trainStep(bar); err != nil {
				return nil, err
			}
		}
		if t.pending != nil {
			interrupted, err := t.writeRow(ctx, bar)
			if err != nil {
				return nil, err
			}
			if interrupted {
				continue // saved with the row still pending, at the top of the loop
			}
		}
		if t.opts.AfterStep != nil {
			t.opts.AfterStep(t.step)
		}
	}
	bar.finish()
	return t.result(), nil
}

// result reports the run as it stands.
func (t *trainer) result() *Result {
	return &Result{
		Dir: t.dir, Steps: t.step, TrainLoss: t.lastTrainLoss, TestLoss: t.lastTest,
		TestBatch: t.testBatches(), TrainSecs: t.trainSecs,
		TokensPerSec: float64(t.step) * t.tokensPerStep() / t.trainSecs, Threads: t.threads,
	}
}

// tokensPerStep is what tokens/s counts: a step consumes grad_accum
// batches of windows.
func (t *trainer) tokensPerStep() float64 {
	return float64(t.windowsPerStep() * t.cfg.Model.Context)
}

// stopInterrupted saves the checkpoint and the model when ctx is done and
// says how to resume.
func (t *trainer) stopInterrupted(bar *trainProgress) error {
	t.pauseClock()
	err := t.saveAll()
	t.waitForSave()
	if err != nil {
		return fmt.Errorf("interrupted, and saving failed: %w", err)
	}
	bar.finish()
	fmt.Fprintf(t.opts.Log, "\ninterrupted at step %d of %d; checkpoint and model saved in %s\nresume with: gptg train --resume %s%s\n",
		t.step, t.total, t.dir, t.dir, t.distributedFlag())
	return ErrInterrupted
}

// trainStep takes step t.step. When a metrics row is due it is left in
// t.pending for writeRow; between evaluations a checkpoint is saved every
// opts.CheckpointEvery steps.
func (t *trainer) trainStep(bar *trainProgress) error {
	if err := t.batch(t.step); err != nil {
		return fmt.Errorf("step %d: %w; %s", t.step, err, t.lastCheckpoint())
	}
	r, err := t.stepper.Step(t.step, t.x, t.y)
	if err != nil {
		return fmt.Errorf("%w; %s", err, t.lastCheckpoint())
	}
	t.step++
	t.lossSum += r.Loss
	t.lossCount++
	t.lastGradNorm = r.GradNorm

	cfg := t.cfg.Train
	evalNow := t.step == t.total || (cfg.EvalEvery > 0 && t.step%cfg.EvalEvery == 0)
	if evalNow || t.step%cfg.LogEvery == 0 {
		t.holdRow(r, evalNow)
	} else {
		bar.step(t.step, r)
	}
	if !evalNow && t.step%t.opts.CheckpointEvery == 0 {
		t.pauseClock()
		if err := t.saveAll(); err != nil {
			return err
		}
		t.startClock()
	}
	return nil
}

// holdRow makes the metrics row of the step just taken, its training loss
// the mean since the last row, and holds it in t.pending until writeRow
// has evaluated (if evalNow) and written it.
func (t *trainer) holdRow(r StepResult, evalNow bool) {
	elapsed := t.trainedSecs()
	t.pending = &MetricsRow{
		Step: t.step, Epoch: float64(t.step) / float64(t.perEpoch), LR: r.LR,
		Loss: t.lossSum / float64(t.lossCount), GradNorm: r.GradNorm,
		TokensPerSec: float64(t.step) * t.tokensPerStep() / elapsed, ElapsedSecs: elapsed,
		HeapMB: heapMB(), RSSMB: rssMB(),
	}
	t.pendingEval = evalNow
	t.lastTrainLoss = t.pending.Loss
	t.lossSum, t.lossCount = 0, 0
}

// writeRow evaluates the pending row's test loss if it asks for one,
// appends the row to metrics.jsonl and, after an evaluation, saves the
// checkpoint and the model. interrupted means ctx stopped the evaluation:
// the row stays pending, to be saved with the checkpoint.
func (t *trainer) writeRow(ctx context.Context, bar *trainProgress) (interrupted bool, err error) {
	row := t.pending
	if t.follower() { // rank 0 evaluates and writes the row
		t.pending = nil
		return false, nil
	}
	if t.pendingEval {
		t.pauseClock()
		if t.opts.beforeEval != nil {
			t.opts.beforeEval(t.step)
		}
		bar.evaluating(t.step)
		tl, _, err := t.testLoss(ctx)
		if ctx.Err() != nil {
			t.startClock()
			return true, nil
		}
		if err != nil {
			return false, err
		}
		row.TestLoss = &tl
		t.lastTest = tl
	}
	if err := t.opts.stillLocked(t.dir, t.step); err != nil {
		return false, err
	}
	if err := t.metrics.append(*row); err != nil {
		return false, err
	}
	t.pending = nil
	bar.row(*row, t.total)
	if t.pendingEval {
		if err := t.saveAll(); err != nil {
			return false, err
		}
		t.startClock()
	}
	return false, nil
}

// startClock starts (or restarts) the training clock: t.trainSecs counts
// training alone, not evaluations or saves.
func (t *trainer) startClock() { t.segment = time.Now() }

// pauseClock adds the training time since the clock started to t.trainSecs.
func (t *trainer) pauseClock() { t.trainSecs += time.Since(t.segment).Seconds() }

// trainedSecs is the run's training time so far, the running segment included.
func (t *trainer) trainedSecs() float64 { return t.trainSecs + time.Since(t.segment).Seconds() }

// lastCheckpoint says where training can be picked up again after a
// failure, naming only a checkpoint that exists.
func (t *trainer) lastCheckpoint() string {
	if t.savedStep < 0 {
		return fmt.Sprintf("no checkpoint was written yet (train.checkpoint_every is %d)", t.opts.CheckpointEvery)
	}
	return fmt.Sprintf("the last good checkpoint (step %d) is in %s", t.savedStep, t.dir)
}

// heapMB is the heap the last garbage collection found live, in MiB: unlike
// the momentary heap size it does not saw up and down between collections,
// so a leak shows as a rising line.
func heapMB() float64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

// rssMB is the process's resident memory in MiB (Linux; 0 elsewhere).
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return float64(resident*int64(os.Getpagesize())) / (1 << 20)
}

// saveAll writes the checkpoint and then the model file, each atomically.
// The checkpoint goes first, so a write that fails (a full disk) leaves
// both files as they were, at the same earlier step; a crash between the
// two leaves a newer checkpoint beside an older model, which the next save
// of the resumed run brings level.
func (t *trainer) saveAll() error {
	if t.follower() {
		return nil
	}
	if err := t.opts.stillLocked(t.dir, t.step); err != nil {
		return err
	}
	if err := t.saveCheckpoint(); err != nil {
		return fmt.Errorf("saving the checkpoint: %w", err)
	}
	t.savedStep = t.step
	if err := savedmodel.Save(filepath.Join(t.dir, ModelFile), t.cfg.Model, t.data.Vocab, t.prog.Params); err != nil {
		return fmt.Errorf("saving the model: %w", err)
	}
	return nil
}
