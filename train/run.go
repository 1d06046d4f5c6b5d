// Package train runs the training loop: one static graph, compiled once,
// fed a batch per step, its gradients clipped and applied by AdamW, with
// evaluation, metrics, checkpoints and resume.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/runlock"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
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
	// Starting, when set, is called once by Run when its checks of the
	// run folder have passed, before the corpus is read: the command line
	// says there what it trains where, and never before a refusal.
	Starting func()
	// beforeEval, when set, is called before each evaluation (tests
	// interrupt an evaluation here).
	beforeEval func(step int)
	// lock is the run folder's lock, checked before every write into the
	// folder (stillLocked).
	lock *runlock.Lock
	// weightsGiven: every weight is set once the graphs are built (--init's
	// file, a resumed run's checkpoint), so none is drawn.
	weightsGiven bool
	// Comm, for --distributed, is the job's ranks: each takes its share of
	// every step's batches, and only rank 0 writes (distributed.go).
	Comm Comm
	// RanksLost, for --distributed, is told rank 0's line when the job is
	// stopped while rank 0 waits for ranks that are gone; it ends the
	// process (the main goroutine is blocked in MPI).
	RanksLost func(msg string)
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
	opts.starting()
	t, err := startTrainer(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	defer t.close()
	t.recordCorpus()
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

// LengthKeys are the settings --resume may change about the run: how long
// it goes on. Anything else would make the resumed run a different one.
var LengthKeys = []string{"train.epochs", "train.max_steps"}

// machineKeys are settings of the machine, not of the run: --resume may
// change them too, and an edit of them in config.toml is no edit of the run.
var machineKeys = []string{"train.threads", "train.max_memory"}

// startTrainer is a new run's trainer with its starting weights (--init's
// file, or the seed's), the ranks of a distributed run agreed on them.
// It comes before the folder is made or --force removes anything: a model
// file of another shape, or a rank that differs, leaves the old run as it
// was.
func startTrainer(ctx context.Context, cfg *config.Config, opts Options) (*trainer, error) {
	opts.weightsGiven = opts.Init != ""
	t, err := newTrainer(ctx, cfg, cfg.Data.Path, cfg.Data.ValPath, opts)
	if err != nil {
		return nil, err
	}
	if opts.Init != "" {
		err = t.initFrom(opts.Init)
	}
	if err == nil {
		err = t.agree()
	}
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// Resume continues the run in dir from its checkpoint. The result is the
// same, timings aside, as if the run had never stopped. sets may change
// the run's length only (LengthKeys, as "train.max_steps=N"): the
// learning-rate schedule is then recomputed for the new length.
//
// It reads top to bottom as a resume goes, each refusal in the order a
// user meets it (the sets, the folder and its lock, its files, its config,
// the corpus, the checkpoint, a run already finished).
func Resume(ctx context.Context, dir string, sets []string, opts Options) (*Result, error) {
	if err := checkResumeSets(dir, sets); err != nil {
		return nil, err
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
	origin, data, val, err := resumeCorpus(dir, cfg.Data, text)
	if err != nil {
		return nil, err
	}
	opts.weightsGiven = true // the checkpoint's
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
		return t.finished(dir)
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

// checkResumeSets refuses a --set that resuming cannot honour: a run keeps
// its config, bar its length and the machine it runs on.
func checkResumeSets(dir string, sets []string) error {
	for _, s := range sets {
		key, _, _ := strings.Cut(s, "=")
		if key = strings.TrimSpace(key); !slices.Contains(LengthKeys, key) && !slices.Contains(machineKeys, key) {
			return &config.Error{File: "--set", Key: key, Msg: fmt.Sprintf(
				"--resume changes only the run's length (%s) and the machine's %s; to change anything else, start a new run from its config: gptg train %s --set %s --set train.out=NEW_FOLDER",
				strings.Join(LengthKeys, ", "), strings.Join(machineKeys, ", "), filepath.Join(dir, ConfigFile), s)}
		}
	}
	return nil
}

// resumeCorpus finds the run's corpus and validation files from wherever
// gptg runs, and only if they are the ones the run was trained on (text is
// the run's config, which records where they came from).
func resumeCorpus(dir string, d config.Data, text []byte) (origin corpusOrigin, data, val string, err error) {
	origin = readOrigin(text)
	data, err = findCorpus(dir, d, origin)
	if err != nil {
		return origin, "", "", err // it names the run
	}
	origin.setFile(data, dir)
	val, err = findValidation(dir, d, origin)
	if err != nil {
		return origin, "", "", err
	}
	origin.setValFile(val, dir)
	return origin, data, val, nil
}

// finished answers a resume of a run that has done all its steps: refused,
// unless the run was killed while writing its model file, which is then
// written from the checkpoint.
func (t *trainer) finished(dir string) (*Result, error) {
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
