// Package golden reads the reference's golden vectors (gptref.py golden) and
// compares tensors by their rule, for the graph and optimiser tests.
package golden

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/gptg/gptg/config"
)

// Tensor is a flattened tensor with its shape.
type Tensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// Step is one row of the optimiser trajectory.
type Step struct {
	Step     int     `json:"step"`
	LR       float64 `json:"lr"`
	Loss     float64 `json:"loss"`
	GradNorm float64 `json:"grad_norm"`
}

// Case is one golden file: a small model, its inputs and every expected output.
type Case struct {
	Name             string               `json:"name"`
	Model            config.Model         `json:"model"`
	Batch            int                  `json:"batch"`
	Inputs           [][]int              `json:"inputs"`
	Targets          [][]int              `json:"targets"`
	Params           map[string]Tensor    `json:"params"`
	Logits           Tensor               `json:"logits"`
	Loss             float64              `json:"loss"`
	Grads            map[string][]float64 `json:"grads"`
	ZeroGrads        []string             `json:"zero_grads"`
	AttentionWeights [][]float64          `json:"attention_weights"`
	Optimizer        struct {
		Schedule struct {
			LR          float64 `json:"lr"`
			Total       int     `json:"total"`
			Warmup      int     `json:"warmup"`
			MinLR       float64 `json:"min_lr"`
			WeightDecay float64 `json:"weight_decay"`
			Clip        float64 `json:"clip"`
			// Decay is "matrices" when only parameters of two or more
			// dimensions are decayed (nanoGPT's files); empty: all.
			Decay string `json:"decay"`
		} `json:"schedule"`
		Betas       [2]float64           `json:"betas"`
		Eps         float64              `json:"eps"`
		Trajectory  []Step               `json:"trajectory"`
		ParamsAfter map[string][]float64 `json:"params_after"`
	} `json:"optimizer"`
}

// Flat returns a batch of ids (B rows of T) as one row-major slice.
func Flat(rows [][]int) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// Dir is the directory of golden files the tests read: $GPTG_GOLDEN when
// set, else the copy of the reference's files in the repository's testdata.
func Dir() string {
	if d := os.Getenv("GPTG_GOLDEN"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "golden")
}

// Load reads every *.json case in dir, sorted by file name. A directory
// without cases is an error: a golden test that checks nothing must fail.
func Load(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no golden cases (*.json) in %s", dir)
	}
	sort.Strings(files)
	var cases []*Case
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		// Switches a file leaves out take the defaults (the reference's
		// files predate the nanoGPT switches).
		c := &Case{Model: config.Model{Bias: true, Init: "torch"}}
		if err := json.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if c.Model.Dtype == "" {
			c.Model.Dtype = "float64"
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Norm is the Euclidean norm.
func Norm(a []float64) float64 {
	s := 0.0
	for _, v := range a {
		s += v * v
	}
	return math.Sqrt(s)
}

// RelErr is ‖a − b‖ / max(‖b‖, floor); a length mismatch is +Inf.
func RelErr(a, b []float64, floor float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	den := math.Max(Norm(b), floor)
	if den == 0 {
		return Norm(d)
	}
	return Norm(d) / den
}
