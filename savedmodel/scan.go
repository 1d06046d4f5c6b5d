package savedmodel

import (
	"fmt"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
)

// Scan reads and checks a model file as LoadChecked and Apply do, for a
// command that lists a model's parameters without running it (inspect),
// holding one tensor at a time instead of the whole model: check sees the
// metadata's model before any tensor is read; build, given it, builds the
// graph whose parameters the file must hold (with graph.SharedZeros: the
// values are never used), and the file's names and shapes are matched to
// them from its header, before its data is read; then each tensor's
// values are checked (finite, and within float32 for a float32 model) as
// it is read, and dropped. The model returned has no Tensors, but Stored
// says how the file stores them; params are build's.
func Scan(path string, check func(spec config.Model, dataBytes int64) error, build func(spec config.Model) ([]*graph.Param, error)) (m *Model, params []*graph.Param, err error) {
	narrow := false
	err = modelfile.Stream(path, modelfile.Limits{MaxFileSize: MaxFileSize, BeforeData: beforeData(path, &m, check)}, func(_ map[string]string, tensors []modelfile.Tensor) error {
		m.Stored = modelfile.CountDtypes(tensors)
		m.Tensors = make(map[string]modelfile.Tensor, len(tensors))
		for _, t := range tensors {
			m.Tensors[t.Name] = t
		}
		if m.Spec.Dtype == "" { // a file written by the reference: its tensors say
			m.Spec.Dtype = "float32"
			if m.Tensors["tok.weight"].F64 != nil {
				m.Spec.Dtype = "float64"
			}
			if err := validate(path, m.Spec); err != nil {
				return err
			}
		}
		narrow = m.Spec.Dtype != "float64"
		var err error
		if params, err = build(m.Spec); err != nil {
			return err
		}
		return m.match(params, false)
	}, func(t modelfile.Tensor) error {
		for i, v := range t.F32 {
			if err := checkValue(float64(v), i, narrow); err != nil {
				return fmt.Errorf("%s: tensor %s %v", m.Path, t.Name, err)
			}
		}
		for i, v := range t.F64 {
			if err := checkValue(v, i, narrow); err != nil {
				return fmt.Errorf("%s: tensor %s %v", m.Path, t.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	m.Tensors = nil
	return m, params, nil
}
