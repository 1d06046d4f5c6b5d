package savedmodel

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
)

// SharedWeights is a graph.Weights for graphs that only run forward
// (sampling, attention maps): each parameter's value is the file's tensor
// itself, not a copy, converted to the model's dtype once when the file
// holds another. Every graph built with it shares one copy of the
// weights, and building one draws no random numbers (for GPT-2 124M that
// was 2.3 s and 500 MB per graph, before Apply overwrote them).
//
// The graphs must never write into a parameter: forward-only programs do
// not (TestSharedWeightsUnchanged). A graph built with it must pass
// CheckShared before it runs: a tensor missing or of another shape gets a
// value of zeros here, for the build to go on and CheckShared to name it,
// as does one whose values the model's float32 cannot hold.
func (m *Model) SharedWeights() graph.Weights {
	return func(name string, shape []int) *tensor.Dense {
		m.shared.Lock()
		defer m.shared.Unlock()
		t, ok := m.Tensors[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		if ok && t.Len() == n {
			t = m.inDtype(t)
		}
		if !ok || t.Len() != n || (t.F64 != nil) != (m.Spec.Dtype == "float64") {
			if m.Spec.Dtype == "float64" {
				return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float64, n)))
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float32, n)))
		}
		if t.F64 != nil {
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(t.F64))
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(t.F32))
	}
}

// inDtype is t in the model's dtype: t itself, or its converted copy,
// which replaces it in m.Tensors so that the next graph shares it. A value
// the conversion cannot keep is left for CheckShared to report (a float32
// tensor's values are checked there, not here).
func (m *Model) inDtype(t modelfile.Tensor) modelfile.Tensor {
	switch {
	case m.Spec.Dtype == "float64" && t.F32 != nil:
		d := make([]float64, len(t.F32))
		for i, v := range t.F32 {
			d[i] = float64(v)
		}
		t = modelfile.Tensor{Name: t.Name, Shape: t.Shape, F64: d}
	case m.Spec.Dtype != "float64" && t.F64 != nil:
		for i, v := range t.F64 {
			if err := checkValue(v, i, true); err != nil {
				return t // refused by CheckShared, converted never
			}
		}
		d := make([]float32, len(t.F64))
		for i, v := range t.F64 {
			d[i] = float32(v)
		}
		t = modelfile.Tensor{Name: t.Name, Shape: t.Shape, F32: d}
	default:
		return t
	}
	m.Tensors[t.Name] = t
	return t
}

// CheckShared is Apply for a graph built with SharedWeights: every
// parameter in the file with its exact shape, nothing else in the file,
// and every value finite (and within float32 for a float32 model). The
// values are checked once per model, not per graph.
func (m *Model) CheckShared(params []*graph.Param) error {
	if err := m.match(params, false); err != nil {
		return err
	}
	m.shared.Lock()
	defer m.shared.Unlock()
	if m.checked {
		return nil
	}
	narrow := m.Spec.Dtype != "float64"
	for _, p := range params {
		t := m.Tensors[p.Name]
		for i, v := range t.F32 {
			if err := checkValue(float64(v), i, narrow); err != nil {
				return fmt.Errorf("%s: tensor %s %v", m.Path, p.Name, err)
			}
		}
		for i, v := range t.F64 {
			if err := checkValue(v, i, narrow); err != nil {
				return fmt.Errorf("%s: tensor %s %v", m.Path, p.Name, err)
			}
		}
	}
	m.checked = true
	return nil
}
