// Package fidelity compares gptg's forward pass of a model with a
// reference's outputs (bench/gpt2ref.py forward): the logits and the
// attention weights of every block, position by position. The hf tests
// run it on a small GPT-2 and bench/gpt2-golden.sh on the 124M shape.
package fidelity

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
)

// Outputs are one sequence's logits (T, V) and attention weights, per
// block (heads, T, T), flattened row-major.
type Outputs struct {
	Logits    []float64
	Attention [][]float64
}

// ReadIDs reads the token ids the reference was run on (gpt2ref.py's
// ids file: decimal ids separated by whitespace).
func ReadIDs(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, f := range strings.Fields(string(data)) {
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ReadReference reads the file gpt2ref.py forward writes: "logits" and
// "attention.0", "attention.1", ... for blocks blocks.
func ReadReference(path string, blocks int) (*Outputs, error) {
	f, err := modelfile.Read(path, modelfile.Limits{MaxFileSize: 16 << 30})
	if err != nil {
		return nil, err
	}
	get := func(name string) ([]float64, error) {
		t, ok := f.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("%s: no tensor %s", path, name)
		}
		if t.F64 != nil {
			return t.F64, nil
		}
		out := make([]float64, len(t.F32))
		for i, v := range t.F32 {
			out[i] = float64(v)
		}
		return out, nil
	}
	o := &Outputs{}
	if o.Logits, err = get("logits"); err != nil {
		return nil, err
	}
	for b := range blocks {
		a, err := get(fmt.Sprintf("attention.%d", b))
		if err != nil {
			return nil, err
		}
		o.Attention = append(o.Attention, a)
	}
	return o, nil
}

// Forward runs the window graph of spec with the given weights (by
// name) on ids, at positions 0..len(ids)-1.
func Forward(spec config.Model, tensors []modelfile.Tensor, ids []int, be graph.Backend) (*Outputs, error) {
	m, err := graph.Build(spec, graph.Options{Batch: 1, SeqLen: len(ids), Backend: be})
	if err != nil {
		return nil, err
	}
	if err := setParams(m.Params, tensors); err != nil {
		return nil, err
	}
	p, err := tape.Compile(m, false)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Run(ids, nil); err != nil {
		return nil, err
	}
	o := &Outputs{Logits: graph.Float64s(p.Logits.Value())}
	for _, a := range p.Attention {
		o.Attention = append(o.Attention, graph.Float64s(a.Value()))
	}
	return o, nil
}

// Cached runs the key/value-cache graph of spec on ids, one token at a
// time, and returns the logits of every position (T, V).
func Cached(spec config.Model, tensors []modelfile.Tensor, ids []int, be graph.Backend) ([]float64, error) {
	m, err := graph.BuildCached(spec, be)
	if err != nil {
		return nil, err
	}
	if err := setParams(m.Params, tensors); err != nil {
		return nil, err
	}
	p, err := tape.CompileCached(m)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var logits []float64
	for _, id := range ids {
		if err := p.Append(id); err != nil {
			return nil, err
		}
		logits = append(logits, graph.Float64s(p.Logits.Value())...)
	}
	return logits, nil
}

func setParams(params []*graph.Param, tensors []modelfile.Tensor) error {
	byName := map[string]modelfile.Tensor{}
	for _, t := range tensors {
		byName[t.Name] = t
	}
	for _, p := range params {
		t, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("no tensor %s", p.Name)
		}
		if err := savedmodel.SetParam(p, t); err != nil {
			return fmt.Errorf("%s: %v", p.Name, err)
		}
	}
	return nil
}

// Worst is the largest relative error ‖a − b‖ / ‖b‖ over the rows of
// width n (a position's logits, a head's weights at one position), and
// the row where it is.
func Worst(got, want []float64, n int) (float64, int, error) {
	if len(got) != len(want) || n < 1 || len(want)%n != 0 {
		return 0, 0, fmt.Errorf("%d values against %d in rows of %d", len(got), len(want), n)
	}
	worst, at := 0.0, 0
	for r := 0; r < len(want)/n; r++ {
		var d, w float64
		for i := r * n; i < (r+1)*n; i++ {
			d += (got[i] - want[i]) * (got[i] - want[i])
			w += want[i] * want[i]
		}
		e := math.Sqrt(d / w)
		if w == 0 {
			e = math.Sqrt(d)
		}
		if !(e <= worst) { // NaN counts as the worst
			worst, at = e, r
		}
	}
	return worst, at, nil
}

// Sampled runs sampling's path over ids: the first split tokens as a
// prompt (one prefill run, whose keys and values start the cache), then
// the others one at a time through the cache. It returns the logits of
// positions split−1..len(ids)−1, the ones sampling reads.
func Sampled(spec config.Model, tensors []modelfile.Tensor, ids []int, split int, be graph.Backend) ([]float64, error) {
	m := &savedmodel.Model{Path: "model", Spec: spec, Tensors: map[string]modelfile.Tensor{}}
	for _, t := range tensors {
		m.Tensors[t.Name] = t
	}
	s, err := sample.New(m, be)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var logits []float64
	for n := split; n <= len(ids); n++ {
		l, err := s.NextLogits(ids[:n])
		if err != nil {
			return nil, err
		}
		logits = append(logits, l...)
	}
	return logits, nil
}
