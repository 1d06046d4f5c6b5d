// Package savedmodel is gptg's model file: a safetensors file (package
// modelfile) whose tensors are a graph's parameters, named and shaped as
// the reference's state_dict, and whose metadata rebuilds the graph (the
// [model] table) and turns text into ids (the vocabulary). Training writes
// it; sampling, evaluation and the attention maps read it back and rebuild
// the graph from it.
//
// It sits above graph (whose parameters it fills) and corpus (whose
// vocabulary it carries), so that neither has to know the file.
package savedmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
)

// Format is the value of the "format" metadata key of a gptg model file.
const Format = "gptg/1"

// Model is a model file read back: what rebuilds the graph (Spec), what
// turns text into ids (Vocab) and the weights.
type Model struct {
	Path    string
	Spec    config.Model
	Vocab   *corpus.Vocab
	Meta    map[string]string
	Tensors map[string]modelfile.Tensor
}

// Save writes the parameters as a safetensors file the reference
// (gptref.py eval) and other safetensors readers load: tensors named and
// shaped as PyTorch's state_dict, F32 (F64 for a float64 model), and the
// metadata that rebuilds the graph without a config.
func Save(path string, spec config.Model, vocab *corpus.Vocab, params []*graph.Param) error {
	model, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	tokens, err := json.Marshal(vocab.Tokens())
	if err != nil {
		return err
	}
	meta := map[string]string{
		"format": Format, "model": string(model),
		"tokenizer": vocab.Kind(), "vocab": string(tokens),
	}
	tensors, err := Tensors(params)
	if err != nil {
		return err
	}
	return modelfile.Write(path, tensors, meta)
}

// Tensors views the parameters as the model file's tensors (no copy), for
// every kind of model file that stores a graph's parameters.
func Tensors(params []*graph.Param) ([]modelfile.Tensor, error) {
	tensors := make([]modelfile.Tensor, len(params))
	for i, p := range params {
		tensors[i] = modelfile.Tensor{Name: p.Name, Shape: p.Shape}
		switch d := p.Value().Data().(type) {
		case []float32:
			tensors[i].F32 = d
		case []float64:
			tensors[i].F64 = d
		default:
			return nil, fmt.Errorf("%s: unsupported dtype %T", p.Name, d)
		}
	}
	return tensors, nil
}

// Load reads a model file and checks its metadata: a gptg format, a
// model table the graph builder accepts and a vocabulary of that size.
// Tensors are checked against the rebuilt graph by Apply.
func Load(path string) (*Model, error) {
	f, err := modelfile.Read(path, modelfile.Limits{})
	if err != nil {
		return nil, err
	}
	m := &Model{Path: path, Meta: f.Meta, Tensors: f.Tensors}
	if got := f.Meta["format"]; got != Format {
		return nil, fmt.Errorf("%s: not a gptg model file (metadata format is %q, want %q)", path, got, Format)
	}
	// Missing switches take the reference's defaults, as gptref.py does.
	m.Spec = config.DefaultModel()
	m.Spec.Dtype = ""
	if err := decodeStrict([]byte(f.Meta["model"]), &m.Spec); err != nil {
		return nil, fmt.Errorf("%s: metadata \"model\": %v", path, err)
	}
	if err := modelfile.UniqueKeys([]byte(f.Meta["model"])); err != nil {
		return nil, fmt.Errorf("%s: metadata \"model\": %v", path, err)
	}
	if m.Spec.Dtype == "" { // a file written by the reference: its tensors say
		m.Spec.Dtype = "float32"
		if f.Tensors["tok.weight"].F64 != nil {
			m.Spec.Dtype = "float64"
		}
	}
	var tokens []string
	if err := json.Unmarshal([]byte(f.Meta["vocab"]), &tokens); err != nil {
		return nil, fmt.Errorf("%s: metadata \"vocab\" is not a JSON array of strings: %v", path, err)
	}
	kind := f.Meta["tokenizer"]
	if kind == "" {
		kind = "char"
	}
	if m.Vocab, err = corpus.NewVocab(kind, tokens); err != nil {
		return nil, fmt.Errorf("%s: metadata \"vocab\": %v", path, err)
	}
	if m.Spec.Vocab != m.Vocab.Size() {
		return nil, fmt.Errorf("%s: metadata model.vocab is %d but the vocabulary has %d tokens", path, m.Spec.Vocab, m.Vocab.Size())
	}
	// The same rules as a config file's [model] table, sizes included, so a
	// hostile file cannot ask for a giant graph.
	check := config.Default()
	check.Model = m.Spec
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("%s: metadata \"model\": %v", path, strings.TrimPrefix(err.Error(), "config: "))
	}
	return m, nil
}

// decodeStrict decodes a JSON object, rejecting keys config.Model lacks.
func decodeStrict(raw []byte, v any) error {
	if len(raw) == 0 {
		return fmt.Errorf("missing")
	}
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Apply copies the file's tensors into a graph's parameters. Every
// parameter must be in the file with its exact shape and finite values, and
// the file may hold nothing else.
func (m *Model) Apply(params []*graph.Param) error {
	want := map[string]bool{}
	for _, p := range params {
		want[p.Name] = true
		t, ok := m.Tensors[p.Name]
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing", m.Path, p.Name)
		}
		if !slices.Equal(t.Shape, p.Shape) {
			return fmt.Errorf("%s: tensor %s has shape %v, the model's metadata needs %v", m.Path, p.Name, t.Shape, p.Shape)
		}
		data := t.F64
		if data == nil {
			data = make([]float64, len(t.F32))
			for i, v := range t.F32 {
				data[i] = float64(v)
			}
		}
		for i, v := range data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: tensor %s holds %v at entry %d", m.Path, p.Name, v, i)
			}
		}
		if err := p.SetFloat64s(data); err != nil {
			return fmt.Errorf("%s: %v", m.Path, err)
		}
	}
	var extra []string
	for name := range m.Tensors {
		if !want[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("%s: unexpected tensors for this model: %s", m.Path, strings.Join(extra, ", "))
	}
	return nil
}
