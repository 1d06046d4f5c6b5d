package train

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

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
}

// saveCheckpoint writes the parameters, both AdamW moments per parameter
// (float64) and the loop's state.
func (t *trainer) saveCheckpoint() error {
	st := checkpointState{
		Step: t.step, Total: t.total, Seed: t.cfg.Train.Seed, AdamSteps: t.opt.Steps,
		TrainSecs: t.trainSecs, LossSum: t.lossSum, LossCount: t.lossCount,
		LastGradNorm: t.lastGradNorm, LastTrainLoss: t.lastTrainLoss, LastTest: t.lastTest,
		MetricsRows: t.metrics.rows,
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
	meta := map[string]string{"format": checkpointFormat, "state": string(state)}
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
	if st.Total != t.total || st.Seed != t.cfg.Train.Seed || st.Step < 0 || st.Step > st.Total {
		return fmt.Errorf("%s: checkpoint of step %d of %d (seed %d) does not match config.toml (%d steps, seed %d)",
			path, st.Step, st.Total, st.Seed, t.total, t.cfg.Train.Seed)
	}
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
	return t.metrics.reset(st.MetricsRows)
}

// Progress reports how far the run in dir has come: the steps its last
// checkpoint holds and the steps it plans. A folder without a checkpoint
// gives an error wrapping fs.ErrNotExist.
func Progress(dir string) (step, total int, err error) {
	path := filepath.Join(dir, CheckpointFile)
	f, err := modelfile.Read(path, modelfile.Limits{})
	if err != nil {
		return 0, 0, err
	}
	var st checkpointState
	if err := json.Unmarshal([]byte(f.Meta["state"]), &st); err != nil || f.Meta["format"] != checkpointFormat {
		return 0, 0, fmt.Errorf("%s: not a gptg checkpoint", path)
	}
	return st.Step, st.Total, nil
}
