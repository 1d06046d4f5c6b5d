// Resume: a run continued from its checkpoint, and the settings a resume
// may change.

package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/runlock"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/savedmodel"
)

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
	if t.step >= t.total && t.pending == nil {
		if !ModelBehind(dir) {
			return nil, fmt.Errorf("run %s already finished its %d steps: train it longer with `gptg train --resume %s --set train.max_steps=%d` (or train.epochs)",
				dir, t.total, dir, 2*t.total)
		}
		if err := savedmodel.Save(filepath.Join(dir, ModelFile), t.cfg.Model, t.data.Vocab, t.prog.Params); err != nil {
			return nil, fmt.Errorf("saving the model: %w", err)
		}
		fmt.Fprintf(t.opts.Log, "run %s had finished its %d steps, but its %s was missing or older than its checkpoint (killed while writing it): written from the checkpoint\n", dir, t.total, ModelFile)
		return t.result(), nil
	}
	if len(sets) > 0 { // the new length goes on record for the next resume
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
