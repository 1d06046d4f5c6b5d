package train

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"

	"github.com/gptg/gptg/modelfile"
)

// checkpointFormat marks a checkpoint file; it is a safetensors file too.
const checkpointFormat = "gptg-checkpoint/1"

// checkpointState is everything besides tensors that a resumed run needs to
// continue exactly where this one stopped. The data order needs no field of
// its own: epoch e's order is drawn from (seed, e) alone (see batch).
type checkpointState struct {
	Step          int     `json:"step"`
	Total         int     `json:"total"`
	Seed          int64   `json:"seed"`
	AdamSteps     int     `json:"adam_steps"`
	TrainSecs     float64 `json:"train_s"`
	LossSum       float64 `json:"loss_sum"`
	LossCount     int     `json:"loss_count"`
	LastGradNorm  float64 `json:"last_grad_norm"`
	LastTrainLoss float64 `json:"last_train_loss"`
	LastTest      float64 `json:"last_test_loss"`
	MetricsRows   int     `json:"metrics_rows"`
	// RunID is the run's identity (config.toml records it too), so that a
	// checkpoint copied from another run is refused rather than mixed in.
	RunID string `json:"run_id,omitempty"`
	// Pending is a metrics row whose evaluation an interrupt cut short; the
	// resumed run evaluates (PendingEval) and writes it first.
	Pending     *MetricsRow `json:"pending_row,omitempty"`
	PendingEval bool        `json:"pending_eval,omitempty"`
}

// saveCheckpoint writes the parameters, both AdamW moments per parameter
// (float64) and the loop's state.
func (t *trainer) saveCheckpoint() error {
	st := checkpointState{
		Step: t.step, Total: t.total, Seed: t.cfg.Train.Seed, AdamSteps: t.opt.Steps,
		TrainSecs: t.trainSecs, LossSum: t.lossSum, LossCount: t.lossCount,
		LastGradNorm: t.lastGradNorm, LastTrainLoss: t.lastTrainLoss, LastTest: t.lastTest,
		MetricsRows: t.metrics.rows, RunID: t.runID, Pending: t.pending, PendingEval: t.pendingEval,
	}
	state, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var tensors []modelfile.Tensor
	for i, p := range t.prog.Params {
		pt := modelfile.Tensor{Name: "param/" + p.Name, Shape: p.Shape}
		switch d := p.Value().Data().(type) {
		case []float32:
			pt.F32 = d
		case []float64:
			pt.F64 = d
		}
		tensors = append(tensors, pt)
		if t.opt.M != nil {
			tensors = append(tensors,
				modelfile.Tensor{Name: "adam.m/" + p.Name, Shape: p.Shape, F64: t.opt.M[i]},
				modelfile.Tensor{Name: "adam.v/" + p.Name, Shape: p.Shape, F64: t.opt.V[i]})
		}
	}
	cfgText, err := t.cfg.TOML()
	if err != nil {
		return err
	}
	// The resolved config the weights were trained with: a resume compares
	// it with config.toml and names any setting edited since.
	meta := map[string]string{"format": checkpointFormat, "state": string(state), "config": string(cfgText)}
	return modelfile.Write(filepath.Join(t.dir, CheckpointFile), tensors, meta)
}

// loadCheckpoint restores what saveCheckpoint wrote and trims
// metrics.jsonl back to the rows it had then.
func (t *trainer) loadCheckpoint() error {
	path := filepath.Join(t.dir, CheckpointFile)
	f, err := modelfile.Read(path, modelfile.Limits{})
	if err != nil {
		return fmt.Errorf("reading the checkpoint: %w", err)
	}
	if f.Meta["format"] != checkpointFormat {
		return fmt.Errorf("%s: not a gptg checkpoint (format %q)", path, f.Meta["format"])
	}
	var st checkpointState
	if err := json.Unmarshal([]byte(f.Meta["state"]), &st); err != nil {
		return fmt.Errorf("%s: bad state: %v", path, err)
	}
	if st.RunID != "" && t.runID != "" && st.RunID != t.runID {
		return fmt.Errorf("%s belongs to another run (run id %s; %s is run %s): put this run's checkpoint back, or start over with --force",
			path, st.RunID, ConfigFile, t.runID)
	}
	if err := t.sameRun(f.Meta["config"]); err != nil {
		return err
	}
	if st.Seed != t.cfg.Train.Seed || st.Step < 0 || st.Step > st.Total {
		return fmt.Errorf("%s: checkpoint of step %d of %d (seed %d) does not match %s (seed %d)",
			path, st.Step, st.Total, st.Seed, ConfigFile, t.cfg.Train.Seed)
	}
	if t.total < st.Step {
		return fmt.Errorf("the run in %s is at step %d, past the %d steps its length now gives: a run can be extended, not shortened",
			t.dir, st.Step, t.total)
	}
	t.savedTotal = st.Total
	get := func(name string, shape []int) ([]float64, error) {
		tn, ok := f.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("%s: tensor %s is missing", path, name)
		}
		if !slices.Equal(tn.Shape, shape) {
			return nil, fmt.Errorf("%s: tensor %s has shape %v, want %v", path, name, tn.Shape, shape)
		}
		if tn.F64 != nil {
			return tn.F64, nil
		}
		out := make([]float64, len(tn.F32))
		for i, v := range tn.F32 {
			out[i] = float64(v)
		}
		return out, nil
	}
	n := len(t.prog.Params)
	if st.AdamSteps > 0 {
		t.opt.M, t.opt.V = make([][]float64, n), make([][]float64, n)
	}
	for i, p := range t.prog.Params {
		w, err := get("param/"+p.Name, p.Shape)
		if err != nil {
			return err
		}
		if err := p.SetFloat64s(w); err != nil {
			return err
		}
		if st.AdamSteps > 0 {
			if t.opt.M[i], err = get("adam.m/"+p.Name, p.Shape); err != nil {
				return err
			}
			if t.opt.V[i], err = get("adam.v/"+p.Name, p.Shape); err != nil {
				return err
			}
		}
	}
	t.opt.Steps = st.AdamSteps
	t.step, t.trainSecs = st.Step, st.TrainSecs
	t.lossSum, t.lossCount = st.LossSum, st.LossCount
	t.lastGradNorm, t.lastTrainLoss, t.lastTest = st.LastGradNorm, st.LastTrainLoss, st.LastTest
	t.pending, t.pendingEval = st.Pending, st.PendingEval
	t.savedStep = st.Step
	return t.metrics.reset(st.MetricsRows, t.opts.Log)
}

// sameRun refuses to resume when config.toml differs from the config the
// checkpoint was trained with, other than in the run's length, its folder,
// the machine's settings (threads, max_memory) and the [sample] table
// (which only sets sample's defaults). saved is the
// checkpoint's copy ("" in checkpoints older than that copy: not checked).
func (t *trainer) sameRun(saved string) error {
	if saved == "" {
		return nil
	}
	old, err := config.Parse("the checkpoint's config", []byte(saved))
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(t.dir, CheckpointFile), err)
	}
	cur := *t.cfg
	cur.Train.Epochs, cur.Train.MaxSteps = old.Train.Epochs, old.Train.MaxSteps
	cur.Train.Out, cur.Sample = old.Train.Out, old.Sample
	cur.Train.Threads, cur.Train.MaxMemory = old.Train.Threads, old.Train.MaxMemory // the machine's
	changed := cur.Diff(old)
	if len(changed) == 0 {
		return nil
	}
	// Both lists name the same keys in the same (schema) order.
	for i, was := range old.Diff(&cur) {
		_, v, _ := strings.Cut(was, "=")
		changed[i] += " (was " + v + ")"
	}
	return &config.Error{File: filepath.Join(t.dir, ConfigFile), Msg: fmt.Sprintf(
		"edited since the run started (%s): a resumed run continues as it was, and only %s may change (gptg train --resume %s --set train.max_steps=N). Undo the edit, or start a new run from this config with --set train.out=NEW_FOLDER",
		strings.Join(changed, ", "), strings.Join(LengthKeys, " and "), t.dir)}
}

// Progress reports how far the run in dir has come: the steps its last
// checkpoint holds and the steps it plans. A step counts once its metrics
// row is written: a run interrupted during its final evaluation is not
// finished. A folder without a checkpoint gives an error wrapping
// fs.ErrNotExist.
func Progress(dir string) (step, total int, err error) {
	path := filepath.Join(dir, CheckpointFile)
	meta, err := modelfile.ReadMeta(path, modelfile.Limits{}) // the header: a checkpoint can be 200 MB
	if err != nil {
		return 0, 0, err
	}
	var st checkpointState
	if err := json.Unmarshal([]byte(meta["state"]), &st); err != nil || meta["format"] != checkpointFormat {
		return 0, 0, fmt.Errorf("%s: not a gptg checkpoint", path)
	}
	if st.Pending != nil {
		return st.Step - 1, st.Total, nil
	}
	return st.Step, st.Total, nil
}
