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
	"sync"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
)

// Format is the value of the "format" metadata key of a gptg model file.
const Format = "gptg/1"

// MaxFileSize bounds the model files Load, LoadChecked, LoadMeta and Scan
// open: GPT-2 xl's is 6.2 GB, beyond modelfile's default of 2 GiB. The
// size alone allocates nothing: the header is bounded on its own, and a
// file whose tensors are larger than its metadata's model is refused
// before they are read (CheckDataSize), a model too large for the memory
// by the caller's check.
const MaxFileSize = 64 << 30

// Model is a model file read back: what rebuilds the graph (Spec), what
// turns text into ids (Vocab) and the weights.
type Model struct {
	Path    string
	Spec    config.Model
	Vocab   *corpus.Vocab
	Meta    map[string]string
	Tensors map[string]modelfile.Tensor
	// Stored counts the file's tensors by the dtype it stores them in
	// (Scan sets it: its model has no Tensors to tell).
	Stored []modelfile.DtypeCount

	// shared guards what SharedWeights and CheckShared change: the
	// tensors converted to the model's dtype, and whether the values were
	// checked (once per model, for every graph sharing them).
	shared  sync.Mutex
	checked bool
}

// Save writes the parameters as a safetensors file the reference
// (gptref.py eval) and other safetensors readers load: tensors named and
// shaped as PyTorch's state_dict, F32 (F64 for a float64 model), and the
// metadata that rebuilds the graph without a config. Path is a file the
// caller names itself (a run's model.safetensors): whatever is there, a
// link included, is replaced, never written through (modelfile.WriteOwn).
func Save(path string, spec config.Model, vocab *corpus.Vocab, params []*graph.Param) error {
	model, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	meta := map[string]string{"format": Format, "model": string(model), "tokenizer": vocab.Kind()}
	switch vocab.Kind() {
	case corpus.GPT2:
		// GPT-2's vocabulary ships inside gptg: its kind names it, and its
		// 50,257 tokens (byte strings, not all UTF-8) are not repeated.
	case corpus.BPE:
		// A learned BPE is its merges, in order: its tokens follow from
		// them (and are byte strings, not all UTF-8).
		merges, err := json.Marshal(vocab.Merges())
		if err != nil {
			return err
		}
		meta["merges"] = string(merges)
	default:
		tokens, err := json.Marshal(vocab.Tokens())
		if err != nil {
			return err
		}
		meta["vocab"] = string(tokens)
	}
	tensors, err := Tensors(params)
	if err != nil {
		return err
	}
	return modelfile.WriteOwn(path, tensors, meta)
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
// model table the graph builder accepts and a vocabulary of that size —
// before any tensor is read, so that a file whose tensors are far larger
// than the model its metadata describes is refused unread. Tensors are
// checked against the rebuilt graph by Apply.
func Load(path string) (*Model, error) {
	return LoadChecked(path, nil)
}

// beforeData is LoadChecked's and Scan's look at the file's header before
// any tensor is read: the model the metadata describes (into *m), its data
// size, then the caller's check with the model's dtype (when the metadata
// leaves it to the tensors: float64 if they take more than 6 bytes a
// parameter).
func beforeData(path string, m **Model, check func(spec config.Model, dataBytes int64) error) func(map[string]string, int64) error {
	return func(meta map[string]string, dataBytes int64) error {
		var err error
		if *m, err = fromMeta(path, meta); err != nil {
			return err
		}
		if err := CheckDataSize(path, dataBytes, (*m).Spec.ParamCount()); err != nil {
			return err
		}
		if check == nil {
			return nil
		}
		spec := (*m).Spec
		if spec.Dtype == "" {
			spec.Dtype = "float32"
			if dataBytes > 6*spec.ParamCount() {
				spec.Dtype = "float64"
			}
		}
		return check(spec, dataBytes)
	}
}

// LoadChecked is Load with a check of the caller's before the tensors are
// read: check sees the model the metadata describes (its dtype, when the
// metadata leaves it to the tensors, guessed from the size of their data)
// and the bytes of tensor data the file holds. A caller refuses there a
// model too large to build without reading a byte of it.
func LoadChecked(path string, check func(spec config.Model, dataBytes int64) error) (*Model, error) {
	var m *Model
	f, err := modelfile.Read(path, modelfile.Limits{MaxFileSize: MaxFileSize, BeforeData: beforeData(path, &m, check)})
	if err != nil {
		return nil, err
	}
	m.Tensors = f.Tensors
	if m.Spec.Dtype == "" { // a file written by the reference: its tensors say
		m.Spec.Dtype = "float32"
		if f.Tensors["tok.weight"].F64 != nil {
			m.Spec.Dtype = "float64"
		}
		if err := validate(path, m.Spec); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// LoadMeta is Load without the tensors: the model and vocabulary a file's
// header describes, read without its (perhaps large) data.
func LoadMeta(path string) (*Model, error) {
	meta, err := modelfile.ReadMeta(path, modelfile.Limits{MaxFileSize: MaxFileSize})
	if err != nil {
		return nil, err
	}
	return fromMeta(path, meta)
}

// CheckDataSize refuses a model file whose tensor data (dataBytes) is
// larger than params parameters can take, at 8 bytes each (float64) and a
// little slack: what a file holds beyond its model would be read into
// memory only to be refused as unexpected tensors.
func CheckDataSize(path string, dataBytes, params int64) error {
	if limit := 8*params + 1<<16; dataBytes > limit {
		return fmt.Errorf("%s: the tensors take %d bytes, more than the %d that the %d parameters of the model its metadata describes can take: the file is damaged",
			quote.Name(path), dataBytes, limit, params)
	}
	return nil
}

// fromMeta checks a model file's metadata and returns the model it
// describes, without tensors.
func fromMeta(path string, meta map[string]string) (*Model, error) {
	m := &Model{Path: path, Meta: meta}
	if got := meta["format"]; got != Format {
		return nil, fmt.Errorf("%s: not a gptg model file (metadata format is %q, want %q)", path, got, Format)
	}
	// Missing switches take the reference's defaults, as gptref.py does.
	m.Spec = config.DefaultModel()
	m.Spec.Dtype = ""
	if err := modelfile.DecodeJSON([]byte(meta["model"]), &m.Spec); err != nil {
		return nil, fmt.Errorf("%s: metadata \"model\": %v", path, err)
	}
	var err error
	if m.Vocab, err = vocabFromMeta(path, meta); err != nil {
		return nil, err
	}
	if m.Spec.Vocab != m.Vocab.Size() {
		return nil, fmt.Errorf("%s: metadata model.vocab is %d but the vocabulary has %d tokens", path, m.Spec.Vocab, m.Vocab.Size())
	}
	spec := m.Spec
	if spec.Dtype == "" { // decided by the tensors once read, and checked again then
		spec.Dtype = "float32"
	}
	if err := validate(path, spec); err != nil {
		return nil, err
	}
	return m, nil
}

// vocabFromMeta is the vocabulary a model file's metadata names: "tokenizer"
// (char when missing, as in the first files) and, for char and word, the
// tokens in id order ("vocab"), for bpe the merges in order ("merges", a
// JSON array of [left, right] id pairs). A gpt2 file has no "vocab": the
// tokenizer is built into gptg, and a list there would be a second,
// unchecked one.
func vocabFromMeta(path string, meta map[string]string) (*corpus.Vocab, error) {
	kind := meta["tokenizer"]
	if kind == "" {
		kind = corpus.Char
	}
	if kind == corpus.GPT2 {
		if _, ok := meta["vocab"]; ok {
			return nil, fmt.Errorf("%s: metadata \"vocab\" is given for tokenizer %q, whose vocabulary is built into gptg: the file is damaged", path, kind)
		}
		return corpus.NewGPT2Vocab()
	}
	if kind == corpus.BPE {
		if _, ok := meta["vocab"]; ok {
			return nil, fmt.Errorf("%s: metadata \"vocab\" is given for tokenizer %q, whose tokens follow from its \"merges\": the file is damaged", path, kind)
		}
		// [][]int, not [][2]int: json drops the elements of a longer
		// array and zero-fills a shorter one without a word.
		var pairs [][]int
		if err := modelfile.DecodeJSON([]byte(meta["merges"]), &pairs); err != nil {
			return nil, fmt.Errorf("%s: metadata \"merges\" is not a JSON array of [left, right] id pairs: %v", path, err)
		}
		merges := make([][2]int, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, fmt.Errorf("%s: metadata \"merges\": merge %d has %d ids, not 2 (left, right)", path, i, len(p))
			}
			merges[i] = [2]int{p[0], p[1]}
		}
		v, err := corpus.NewLearnedVocab(merges)
		if err != nil {
			return nil, fmt.Errorf("%s: metadata \"merges\": %v", path, err)
		}
		return v, nil
	}
	if _, ok := meta["merges"]; ok {
		return nil, fmt.Errorf("%s: metadata \"merges\" is given for tokenizer %q, which has none: the file is damaged", path, kind)
	}
	var tokens []string
	if err := modelfile.DecodeJSON([]byte(meta["vocab"]), &tokens); err != nil {
		return nil, fmt.Errorf("%s: metadata \"vocab\" is not a JSON array of strings: %v", path, err)
	}
	v, err := corpus.NewVocab(kind, tokens)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata \"vocab\": %v", path, err)
	}
	return v, nil
}

// validate applies the rules of a config file's [model] table, sizes
// included, so a hostile file cannot ask for a giant graph.
func validate(path string, spec config.Model) error {
	check := config.Default()
	check.Model = spec
	if err := check.Validate(); err != nil {
		return fmt.Errorf("%s: metadata \"model\": %v", path, strings.TrimPrefix(err.Error(), "config: "))
	}
	return nil
}

// CheckValues refuses a tensor's values that are not finite, or (for a
// float32 parameter) finite only as float64: 1e300 in an F64 tensor of a
// float32 model would become +Inf on the way in, past the NaN check.
func CheckValues(data []float64, p *graph.Param) error {
	_, narrow := p.Value().Data().([]float32)
	for i, v := range data {
		if err := checkValue(v, i, narrow); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(v float64, i int, narrow bool) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("holds %v at entry %d", v, i)
	case narrow && math.Abs(v) > math.MaxFloat32:
		return fmt.Errorf("holds %g at entry %d, beyond the range of the model's float32", v, i)
	}
	return nil
}

// SetParam copies a file's tensor into a parameter of the same shape,
// converting between float32 and float64 value by value, after checking
// each value as CheckValues does. No float64 copy of the tensor is made on
// the way: for a float32 model it would be twice the tensor's size, as
// garbage, for every tensor of every graph built.
func SetParam(p *graph.Param, t modelfile.Tensor) error {
	if t.Len() != p.Value().Shape().TotalSize() {
		return fmt.Errorf("holds %d values for %d entries", t.Len(), p.Value().Shape().TotalSize())
	}
	switch d := p.Value().Data().(type) {
	case []float32:
		for i, v := range t.F32 {
			if err := checkValue(float64(v), i, true); err != nil {
				return err
			}
			d[i] = v
		}
		for i, v := range t.F64 {
			if err := checkValue(v, i, true); err != nil {
				return err
			}
			d[i] = float32(v)
		}
	case []float64:
		for i, v := range t.F32 {
			if err := checkValue(float64(v), i, false); err != nil {
				return err
			}
			d[i] = float64(v)
		}
		for i, v := range t.F64 {
			if err := checkValue(v, i, false); err != nil {
				return err
			}
			d[i] = v
		}
	default:
		return fmt.Errorf("unsupported dtype %T", d)
	}
	return nil
}

// Apply copies the file's tensors into a graph's parameters. Every
// parameter must be in the file with its exact shape and finite values, and
// the file may hold nothing else.
func (m *Model) Apply(params []*graph.Param) error { return m.match(params, true) }

// match is Apply; without set it checks the names and shapes only (Scan's
// tensors have no values yet).
func (m *Model) match(params []*graph.Param, set bool) error {
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
		if !set {
			continue
		}
		if err := SetParam(p, t); err != nil {
			return fmt.Errorf("%s: tensor %s %v", m.Path, p.Name, err)
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
