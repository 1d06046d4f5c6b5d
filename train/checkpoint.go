package train

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
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
	// Tokens is the target words a translation run has trained on (its
	// tokens/s); a GPT run's follow from its steps.
	Tokens float64 `json:"tokens,omitempty"`
	// RunID is the run's identity (config.toml records it too), so that a
	// checkpoint copied from another run is refused rather than mixed in.
	RunID string `json:"run_id,omitempty"`
	// Pending is a metrics row whose evaluation an interrupt cut short; the
	// resumed run evaluates (PendingEval) and writes it first.
	Pending     *MetricsRow `json:"pending_row,omitempty"`
	PendingEval bool        `json:"pending_eval,omitempty"`
}

// saveCheckpoint writes the parameters, both AdamW moments per parameter
// (in its dtype) and the loop's state.
func (t *trainer) saveCheckpoint() error {
	st := checkpointState{
		Step: t.step, Total: t.total, Seed: t.cfg.Train.Seed, AdamSteps: t.opt.Steps,
		TrainSecs: t.trainSecs, LossSum: t.lossSum, LossCount: t.lossCount,
		LastGradNorm: t.lastGradNorm, LastTrainLoss: t.lastTrainLoss, LastTest: t.lastTest,
		MetricsRows: t.metrics.rows, RunID: t.runID, Pending: t.pending, PendingEval: t.pendingEval,
	}
	return writeCheckpoint(filepath.Join(t.dir, CheckpointFile), t.cfg, t.prog.Params, t.opt, st)
}

// writeCheckpoint writes a checkpoint file of any run, GPT or translation:
// params, both AdamW moments per parameter (in its dtype), the loop's state st
// and the resolved config.
func writeCheckpoint(path string, cfg *config.Config, params []*graph.Param, opt *AdamW, st checkpointState) error {
	state, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var tensors []modelfile.Tensor
	for i, p := range params {
		pt := modelfile.Tensor{Name: "param/" + p.Name, Shape: p.Shape}
		switch d := p.Value().Data().(type) {
		case []float32:
			pt.F32 = d
		case []float64:
			pt.F64 = d
		}
		tensors = append(tensors, pt)
		if opt.M != nil {
			tensors = append(tensors,
				modelfile.Tensor{Name: "adam.m/" + p.Name, Shape: p.Shape, F32: opt.M[i].F32, F64: opt.M[i].F64},
				modelfile.Tensor{Name: "adam.v/" + p.Name, Shape: p.Shape, F32: opt.V[i].F32, F64: opt.V[i].F64})
		}
	}
	cfgText, err := cfg.TOML()
	if err != nil {
		return err
	}
	// The resolved config the weights were trained with: a resume compares
	// it with config.toml and names any setting edited since.
	meta := map[string]string{"format": checkpointFormat, "state": string(state), "config": string(cfgText)}
	return modelfile.WriteOwn(path, tensors, meta) // a link planted in the run folder is replaced, not followed
}

// loadCheckpoint restores what saveCheckpoint wrote and trims
// metrics.jsonl back to the rows it had then.
func (t *trainer) loadCheckpoint() error {
	st, err := readCheckpoint(t.dir, t.cfg, t.runID, t.total, t.prog.Params, t.opt)
	if err != nil {
		return err
	}
	t.savedTotal = st.Total
	t.step, t.trainSecs = st.Step, st.TrainSecs
	t.lossSum, t.lossCount = st.LossSum, st.LossCount
	t.lastGradNorm, t.lastTrainLoss, t.lastTest = st.LastGradNorm, st.LastTrainLoss, st.LastTest
	t.pending, t.pendingEval = st.Pending, st.PendingEval
	t.savedStep = st.Step
	return t.metrics.reset(st.MetricsRows, st.Step, t.opts.Log)
}

// readCheckpoint reads the checkpoint of the run in dir (config cfg, run
// id runID, now total steps long) into params and opt, after checking that
// it belongs to this run and config and that its state is consistent, and
// returns its state.
func readCheckpoint(dir string, cfg *config.Config, runID string, total int, params []*graph.Param, opt *AdamW) (*checkpointState, error) {
	path := filepath.Join(dir, CheckpointFile)
	// The parameters and AdamW's two moments, 8 bytes a value at most: a
	// checkpoint holding more is refused before its tensors are read.
	size := int64(0)
	for _, p := range params {
		size += int64(p.Size())
	}
	f, err := modelfile.Read(path, modelfile.Limits{BeforeData: func(_ map[string]string, dataBytes int64) error {
		if limit := 3*8*size + 1<<16; dataBytes > limit {
			return fmt.Errorf("%s: the tensors take %d bytes, more than the %d that this run's %d parameters and their AdamW moments can take: the file is damaged",
				path, dataBytes, limit, size)
		}
		return nil
	}})
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoint: %w", err)
	}
	if f.Meta["format"] != checkpointFormat {
		return nil, fmt.Errorf("%s: not a gptg checkpoint (format %q)", path, f.Meta["format"])
	}
	var st checkpointState
	if err := json.Unmarshal([]byte(f.Meta["state"]), &st); err != nil {
		return nil, fmt.Errorf("%s: bad state: %v", path, err)
	}
	if err := checkRunID(dir, path, st.RunID, runID); err != nil {
		return nil, err
	}
	if err := sameRun(cfg, dir, f.Meta["config"]); err != nil {
		return nil, err
	}
	if err := checkState(cfg, path, st); err != nil {
		return nil, err
	}
	if st.Seed != cfg.Train.Seed {
		return nil, fmt.Errorf("%s: checkpoint of step %d of %d (seed %d) does not match %s (seed %d)",
			path, st.Step, st.Total, st.Seed, ConfigFile, cfg.Train.Seed)
	}
	if total < st.Step {
		return nil, fmt.Errorf("the run in %s is at step %d, past the %d steps its length now gives: a run can be extended, not shortened",
			dir, st.Step, total)
	}
	if err := setTensors(f, path, params, opt, st.AdamSteps > 0); err != nil {
		return nil, err
	}
	opt.Steps = st.AdamSteps
	return &st, nil
}

// checkRunID refuses a checkpoint (path, of run saved) that is not of the
// run whose config.toml in dir says runID.
func checkRunID(dir, path, saved, runID string) error {
	// Both carry the run id since run ids exist; a run older than them has
	// it in neither. One without the other is a file edited or swapped:
	// without the check, a config.toml whose id line was deleted resumed
	// over any checkpoint of the same config.
	switch conf := filepath.Join(dir, ConfigFile); {
	case saved != "" && runID != "" && saved != runID:
		return fmt.Errorf("%s belongs to another run (run id %s; %s is run %s): put this run's checkpoint back, or start over with --force",
			path, saved, ConfigFile, runID)
	case saved != "" && runID == "":
		return fmt.Errorf("%s has no run id line, so nothing says that %s (of run %s) is this run's: if it is, put the line %q back at the top of %s; else start over with --force",
			conf, path, saved, runIDPrefix+saved, ConfigFile)
	case saved == "" && runID != "":
		return fmt.Errorf("%s has no run id, so nothing says that it belongs to this run (%s is run %s): put this run's checkpoint back, or start over with --force",
			path, ConfigFile, runID)
	}
	return nil
}

// setTensors sets params, and with adam AdamW's moments, from the
// checkpoint f read from path.
func setTensors(f *modelfile.File, path string, params []*graph.Param, opt *AdamW, adam bool) error {
	get := func(name string, shape []int) (modelfile.Tensor, error) {
		tn, ok := f.Tensors[name]
		if !ok {
			return tn, fmt.Errorf("%s: tensor %s is missing", path, name)
		}
		if !slices.Equal(tn.Shape, shape) {
			return tn, fmt.Errorf("%s: tensor %s has shape %v, want %v", path, name, tn.Shape, shape)
		}
		return tn, nil
	}
	n := len(params)
	if adam {
		opt.M, opt.V = make([]Moment, n), make([]Moment, n)
	}
	for i, p := range params {
		w, err := get("param/"+p.Name, p.Shape)
		if err != nil {
			return err
		}
		if err := setParam(p, w); err != nil {
			return err
		}
		if !adam {
			continue
		}
		m, err := get("adam.m/"+p.Name, p.Shape)
		if err != nil {
			return err
		}
		v, err := get("adam.v/"+p.Name, p.Shape)
		if err != nil {
			return err
		}
		opt.M[i], opt.V[i] = momentOf(m, p.Value().Data()), momentOf(v, p.Value().Data())
	}
	return nil
}

// setParam sets p's values from the checkpoint's tensor t, copying
// directly when their dtypes agree.
func setParam(p *graph.Param, t modelfile.Tensor) error {
	if d, ok := p.Value().Data().([]float32); ok && t.F32 != nil {
		if len(d) != len(t.F32) {
			return fmt.Errorf("%s: %d values for %d entries", p.Name, len(t.F32), len(d))
		}
		copy(d, t.F32)
		return nil
	}
	if t.F64 != nil {
		return p.SetFloat64s(t.F64)
	}
	return p.SetFloat64s(widen(t.F32))
}

// momentOf is the checkpoint's moment t in the dtype of the parameter
// whose values are data. A checkpoint of a float32 run written before the
// moments took the parameters' dtype holds them in float64: they are
// rounded to float32, and the run goes on as one whose moments were
// float32 all along (the following steps are not those the older gptg
// would have taken; a run saved and resumed by this one stays bit-identical
// to one not interrupted).
func momentOf(t modelfile.Tensor, data any) Moment {
	if _, ok := data.([]float64); ok {
		if t.F64 != nil {
			return Moment{F64: t.F64}
		}
		return Moment{F64: widen(t.F32)}
	}
	if t.F32 != nil {
		return Moment{F32: t.F32}
	}
	m := make([]float32, len(t.F64))
	for i, x := range t.F64 {
		m[i] = float32(x)
	}
	return Moment{F32: m}
}

// widen is x in float64.
func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// checkState refuses a state that no run could have saved, which a resume
// would otherwise trust: a step moved near the end would train one step
// and call the run finished. Each field is checked against the others and
// against the config: every step is one optimizer step, and every
// train.log_every-th (and train.eval_every-th) step wrote a metrics row.
func checkState(cfg *config.Config, path string, st checkpointState) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: the checkpoint's state is inconsistent (%s): the file was edited or damaged; start over with --force",
			path, fmt.Sprintf(format, args...))
	}
	tr := cfg.Train
	logged := 0 // rows the steps up to st.Step wrote at the least
	if tr.LogEvery > 0 {
		logged = st.Step / tr.LogEvery
	}
	if tr.EvalEvery > 0 {
		logged = max(logged, st.Step/tr.EvalEvery)
	}
	if st.Pending != nil && logged > 0 {
		logged-- // the row of the last step is pending, not written
	}
	finite := func(vs ...float64) bool {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		return true
	}
	switch {
	case st.Step < 0:
		return bad("step %d is negative", st.Step)
	case st.Total < 1:
		return bad("total %d is not a number of steps", st.Total)
	case st.Step > st.Total:
		return bad("step %d is past the run's total of %d", st.Step, st.Total)
	case st.AdamSteps != st.Step:
		return bad("adam_steps %d is not step %d: every step is one optimizer step", st.AdamSteps, st.Step)
	case st.MetricsRows < logged || st.MetricsRows > st.Step:
		return bad("%d metrics rows for %d steps, which log every %d", st.MetricsRows, st.Step, tr.LogEvery)
	case st.LossCount < 0 || st.LossCount > st.Step:
		return bad("loss_count %d for %d steps", st.LossCount, st.Step)
	case st.Pending != nil && st.Pending.Step != st.Step:
		return bad("the pending metrics row is of step %d, the checkpoint of step %d", st.Pending.Step, st.Step)
	case !finite(st.TrainSecs, st.LossSum, st.LastGradNorm, st.LastTrainLoss, st.LastTest) || st.TrainSecs < 0:
		return bad("a time or a loss that is negative or not a number")
	}
	return nil
}

// sameRun refuses to resume when config.toml differs from the config the
// checkpoint was trained with, other than in the run's length, its folder,
// the machine's settings (threads, max_memory) and the [sample] table
// (which only sets sample's defaults). saved is the
// checkpoint's copy ("" in checkpoints older than that copy: not checked).
func sameRun(cfg *config.Config, dir, saved string) error {
	if saved == "" {
		return nil
	}
	old, err := config.Parse("the checkpoint's config", []byte(saved))
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, CheckpointFile), err)
	}
	cur := *cfg
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
	return &config.Error{File: filepath.Join(dir, ConfigFile), Msg: fmt.Sprintf(
		"edited since the run started (%s): a resumed run continues as it was, and only %s may change (gptg train --resume %s --set train.max_steps=N). Undo the edit, or start a new run from this config with --set train.out=NEW_FOLDER",
		strings.Join(changed, ", "), strings.Join(LengthKeys, " and "), dir)}
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
