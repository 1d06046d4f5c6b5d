// Package translate is the translation chapter's model outside training:
// its model file (the encoder–decoder's weights with both vocabularies)
// and decoding a sentence with it, greedily or by beam search.
package translate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/savedmodel"
)

// Format is the "format" metadata of every gptg model file; Arch, under
// "arch", says the file holds an encoder–decoder.
const (
	Format = savedmodel.Format
	Arch   = config.ArchEncoderDecoder
)

// Model is an encoder–decoder with what turns text into ids and back.
type Model struct {
	Path     string
	Config   config.Model // the [model] table it was trained with
	Spec     graph.TranslationSpec
	Src, Tgt *pairs.Vocab
	// MaxSource and MaxTarget are the longest sentences, in words, the
	// model was trained on (data.max_source, data.max_target): the
	// decoder stops after MaxTarget words and EOS.
	MaxSource, MaxTarget int
	Tensors              map[string]modelfile.Tensor
}

// Spec is the graph's spec of a config's [model] table and the two
// vocabularies' sizes.
func Spec(m config.Model, srcVocab, tgtVocab int) graph.TranslationSpec {
	norm, positions := m.Norm, m.Positions
	if positions == "" {
		positions = "learned"
	}
	return graph.TranslationSpec{
		SrcVocab: srcVocab, TgtVocab: tgtVocab, MaxLen: m.Context,
		Embedding: m.Embedding, Heads: m.Heads,
		EncoderBlocks: m.EncoderBlocks, DecoderBlocks: m.DecoderBlocks, FFHidden: m.FFHidden,
		Norm: norm, Positions: positions, Activation: m.Activation,
		TieEmbeddings: m.TieEmbeddings, LabelSmoothing: m.LabelSmoothing, Dropout: m.Dropout,
		Dtype: m.Dtype,
	}
}

// Save writes params as a safetensors model file whose metadata says it
// holds an encoder–decoder and carries what rebuilds it: the [model]
// table, both vocabularies and the length limits. Like savedmodel.Save it
// replaces whatever is at path, never writing through a link.
func Save(path string, m config.Model, src, tgt *pairs.Vocab, maxSource, maxTarget int, params []*graph.Param) error {
	model, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sv, err := json.Marshal(src.Words())
	if err != nil {
		return err
	}
	tv, err := json.Marshal(tgt.Words())
	if err != nil {
		return err
	}
	meta := map[string]string{
		"format": Format, "arch": Arch, "model": string(model), "tokenizer": "word",
		"src_vocab": string(sv), "tgt_vocab": string(tv),
		"max_source": strconv.Itoa(maxSource), "max_target": strconv.Itoa(maxTarget),
	}
	tensors, err := savedmodel.Tensors(params)
	if err != nil {
		return err
	}
	return modelfile.WriteOwn(path, tensors, meta)
}

// IsTranslation reports whether a model file's metadata says it holds an
// encoder–decoder.
func IsTranslation(meta map[string]string) bool { return meta["arch"] == Arch }

// IsTranslationFile reports whether path is a model file whose metadata
// says it holds an encoder–decoder; false for anything unreadable (the
// caller's own reader then says what is wrong).
func IsTranslationFile(path string) bool {
	meta, err := modelfile.ReadMeta(path, modelfile.Limits{}) // the header: not a 2 GB model's tensors twice
	return err == nil && IsTranslation(meta)
}

// Load reads an encoder–decoder model file and checks its metadata, its
// tensors' names and shapes, and their values.
func Load(path string) (*Model, error) { return LoadChecked(path, nil) }

// LoadChecked is Load with check, which is called with the model the
// metadata describes (no tensors yet) and the bytes of the file's tensor
// data before any tensor is read: a memory check refuses a model too
// large for the process there, unread.
func LoadChecked(path string, check func(m *Model, dataBytes int64) error) (*Model, error) {
	var m *Model
	f, err := modelfile.Read(path, modelfile.Limits{BeforeData: beforeData(path, &m, check)})
	if err != nil {
		return nil, err
	}
	m.Tensors = f.Tensors
	if err := m.checkSizes(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := m.checkNames(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := m.toDtype(); err != nil {
		return nil, err
	}
	return m, nil
}

// beforeData is LoadChecked's and Scan's look at the file's header before
// any tensor is read: the model the metadata describes (into *m), its data
// size, then the caller's check.
func beforeData(path string, m **Model, check func(m *Model, dataBytes int64) error) func(map[string]string, int64) error {
	return func(meta map[string]string, dataBytes int64) error {
		var err error
		if *m, err = fromMeta(path, meta); err != nil {
			return err
		}
		if err := savedmodel.CheckDataSize(path, dataBytes, maxParams((*m).Spec)); err != nil {
			return err
		}
		if check != nil {
			return check(*m, dataBytes)
		}
		return nil
	}
}

// toDtype checks every tensor's values and stores it in the model's dtype
// (a file may hold float64 tensors of a float32 model), so that the graphs
// can read the tensors themselves (Weights).
func (m *Model) toDtype() error {
	narrow := m.Spec.Dtype != "float64"
	for _, name := range slices.Sorted(maps.Keys(m.Tensors)) { // the first bad one, the same each time
		t := m.Tensors[name]
		if err := m.checkValues(t, narrow); err != nil {
			return err
		}
		switch {
		case narrow && t.F64 != nil:
			t.F32 = make([]float32, len(t.F64))
			for i, v := range t.F64 {
				t.F32[i] = float32(v)
			}
			t.F64 = nil
		case !narrow && t.F32 != nil:
			t.F64 = make([]float64, len(t.F32))
			for i, v := range t.F32 {
				t.F64[i] = float64(v)
			}
			t.F32 = nil
		default:
			continue
		}
		m.Tensors[name] = t
	}
	return nil
}

// checkValues refuses a tensor holding a value that is not finite, or
// (narrow: a float32 model) finite only as a float64.
func (m *Model) checkValues(t modelfile.Tensor, narrow bool) error {
	bad := func(i int, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) { // NaN would only show as garbage
			return fmt.Errorf("%s: tensor %s holds %v at entry %d", m.Path, t.Name, v, i)
		}
		return fmt.Errorf("%s: tensor %s holds %g at entry %d, beyond the range of the model's float32", m.Path, t.Name, v, i)
	}
	for i, v := range t.F32 {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return bad(i, f)
		}
	}
	for i, v := range t.F64 {
		if math.IsNaN(v) || math.IsInf(v, 0) || narrow && math.Abs(v) > math.MaxFloat32 {
			return bad(i, v)
		}
	}
	return nil
}

// Scan reads and checks a model file as LoadChecked does, for a command
// that lists the model's parameters without running it (inspect), holding
// one tensor at a time instead of the whole model: check sees the
// metadata's model before any tensor is read, the tensors' names and
// shapes are checked from the file's header before any data, then each
// tensor's values as it is read, and it is dropped. The model's Tensors
// have names and shapes only: build its graph with ZeroWeights.
func Scan(path string, check func(m *Model, dataBytes int64) error) (*Model, error) {
	var m *Model
	err := modelfile.Stream(path, modelfile.Limits{BeforeData: beforeData(path, &m, check)}, func(_ map[string]string, tensors []modelfile.Tensor) error {
		m.Tensors = make(map[string]modelfile.Tensor, len(tensors))
		for _, t := range tensors {
			m.Tensors[t.Name] = t
		}
		if err := m.checkSizes(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := m.checkNames(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}, func(t modelfile.Tensor) error {
		return m.checkValues(t, m.Spec.Dtype != "float64")
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ZeroWeights is Weights for a model from Scan, whose tensors have no
// values: the graph's parameters, checked against the file's names and
// shapes as Weights checks them, share one buffer of zeros
// (graph.SharedZeros). Such a graph is for listing, never for running.
func (m *Model) ZeroWeights() graph.Weights {
	zeros := graph.SharedZeros(m.Spec.Dtype)
	return func(name string, shape []int) *tensor.Dense {
		t, ok := m.Tensors[name]
		switch {
		case !ok:
			panic(fmt.Errorf("%s: no tensor %s", m.Path, name))
		case !slices.Equal(t.Shape, shape):
			panic(fmt.Errorf("%s: tensor %s has shape %v, the model needs %v", m.Path, name, t.Shape, shape))
		}
		return zeros(name, shape)
	}
}

// Weights gives a forward graph of the model its parameters' values: the
// file's own tensors, which every graph of a translator shares (see
// graph.Weights). It panics, as graph.Weights may, on a tensor that the
// graph needs and the file lacks or holds in another shape.
func (m *Model) Weights(name string, shape []int) *tensor.Dense {
	t, ok := m.Tensors[name]
	switch {
	case !ok:
		panic(fmt.Errorf("%s: no tensor %s", m.Path, name))
	case !slices.Equal(t.Shape, shape):
		panic(fmt.Errorf("%s: tensor %s has shape %v, the model needs %v", m.Path, name, t.Shape, shape))
	case t.F32 != nil:
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(t.F32))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(t.F64))
}

// maxParams is an upper bound of the parameters of a model of spec s
// (each block's every linear layer with its bias, every norm, learned
// position tables and an untied output layer), for refusing a file whose
// tensors are far larger than its model before reading them.
func maxParams(s graph.TranslationSpec) int64 {
	E, F := int64(s.Embedding), int64(s.FFHidden)
	linear := E*E + E
	norm := 2 * E
	ff := E*F + F + F*E + E
	n := int64(s.SrcVocab+s.TgtVocab)*E + 2*int64(s.MaxLen)*E
	n += int64(s.EncoderBlocks)*(4*linear+2*norm+ff) + norm
	n += int64(s.DecoderBlocks)*(8*linear+3*norm+ff) + norm
	n += int64(s.TgtVocab)*E + int64(s.TgtVocab)
	return n
}

// fromMeta checks a translation model file's metadata and returns the
// model it describes, without tensors: Load calls it before any tensor is
// read.
func fromMeta(path string, meta map[string]string) (*Model, error) {
	if meta["format"] != Format || !IsTranslation(meta) {
		return nil, fmt.Errorf("%s: not a gptg translation model (format %q, arch %q)", path, meta["format"], meta["arch"])
	}
	m := &Model{Path: path}
	bad := func(key string, err error) error {
		return fmt.Errorf("%s: metadata %q: %v", path, key, err)
	}
	// The vocabularies are words of pairs.Tokenize; a file that says it
	// holds another kind would be read with the wrong tokenizer.
	if kind := meta["tokenizer"]; kind != "word" {
		return nil, bad("tokenizer", fmt.Errorf("%s: a translation model's vocabularies are of words (\"word\")", quote.Value(kind)))
	}
	if err := modelfile.DecodeJSON([]byte(meta["model"]), &m.Config); err != nil {
		return nil, bad("model", err)
	}
	for _, side := range []struct {
		key string
		v   **pairs.Vocab
	}{{"src_vocab", &m.Src}, {"tgt_vocab", &m.Tgt}} {
		var words []string
		if err := modelfile.DecodeJSON([]byte(meta[side.key]), &words); err != nil {
			return nil, bad(side.key, err)
		}
		v, err := pairs.NewVocab(words)
		if err == nil {
			err = pairs.CheckWords(words)
		}
		if err != nil {
			return nil, bad(side.key, err)
		}
		*side.v = v
	}
	for _, lim := range []struct {
		key string
		n   *int
	}{{"max_source", &m.MaxSource}, {"max_target", &m.MaxTarget}} {
		n, err := strconv.Atoi(meta[lim.key])
		if err != nil || n < 1 {
			return nil, bad(lim.key, fmt.Errorf("%q is not a positive length", meta[lim.key]))
		}
		*lim.n = n
	}
	// The same rules as a config's [model] table, sizes included (as
	// savedmodel.Load), so that a hostile file cannot ask for a giant graph.
	check := config.Default()
	check.Model = m.Config
	check.Data.Format, check.Data.Tokenizer = "pairs", "word"
	check.Data.MaxSource, check.Data.MaxTarget = m.MaxSource, m.MaxTarget
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("%s: metadata: %v", path, strings.TrimPrefix(err.Error(), "config: "))
	}
	m.Spec = Spec(m.Config, m.Src.Size(), m.Tgt.Size())
	if err := m.Spec.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// A sentence and its EOS (SOS and the target words) take one position
	// each, so the limits the model was trained with fit its learned
	// position tables; sinusoidal positions have no last row.
	for _, lim := range []struct {
		key string
		n   int
	}{{"max_source", m.MaxSource}, {"max_target", m.MaxTarget}} {
		if m.Spec.Positions == "learned" && lim.n+1 > m.Spec.MaxLen {
			return nil, bad(lim.key, fmt.Errorf("%d words and EOS do not fit the model's %d positions (model.context): the file is damaged", lim.n, m.Spec.MaxLen))
		}
	}
	return m, nil
}

// checkSizes compares the tensors that carry each of the metadata's sizes
// (vocabularies, embedding, ff_hidden, positions, the last block of each
// stack) with it before any graph is built: a graph is as large as the
// metadata says, and a damaged or hostile metadata must not make one
// larger than the weights the file holds. A tensor of a block past the
// metadata's count would be silently left out, and is refused too.
func (m *Model) checkSizes() error {
	s := m.Spec
	E := s.Embedding
	want := map[string][]int{
		"src_tok.weight": {s.SrcVocab, E},
		"tgt_tok.weight": {s.TgtVocab, E},
		fmt.Sprintf("encoder.%d.ff.up.weight", s.EncoderBlocks-1): {s.FFHidden, E},
		fmt.Sprintf("decoder.%d.ff.up.weight", s.DecoderBlocks-1): {s.FFHidden, E},
	}
	if s.Positions == "learned" {
		want["src_pos.weight"] = []int{s.MaxLen, E}
		want["tgt_pos.weight"] = []int{s.MaxLen, E}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t, ok := m.Tensors[name]
		switch {
		case !ok:
			return fmt.Errorf("tensor %s is missing (the metadata's model needs it)", name)
		case !slices.Equal(t.Shape, want[name]):
			return fmt.Errorf("tensor %s has shape %v, the metadata's model needs %v", name, t.Shape, want[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Tensors)) {
		for stack, blocks := range map[string]int{"encoder": s.EncoderBlocks, "decoder": s.DecoderBlocks} {
			rest, ok := strings.CutPrefix(name, stack+".")
			if !ok {
				continue
			}
			num, _, _ := strings.Cut(rest, ".")
			if k, err := strconv.Atoi(num); err == nil && k >= blocks {
				return fmt.Errorf("tensor %s belongs to %s block %d, but the metadata's model has %d (%s_blocks)", name, stack, k, blocks, stack)
			}
		}
	}
	return nil
}

// Apply copies the file's tensors into a graph's parameters (a training
// run's, which it changes), which must match them one for one in name and
// shape. Forward-only graphs read the tensors themselves (Weights).
func (m *Model) Apply(params []*graph.Param) error {
	var buf []float64 // one conversion buffer: not a float64 copy of the whole model in garbage
	for _, p := range params {
		t, ok := m.Tensors[p.Name]
		if !ok {
			return fmt.Errorf("%s: no tensor %s", m.Path, p.Name)
		}
		if !slices.Equal(t.Shape, p.Shape) {
			return fmt.Errorf("%s: tensor %s has shape %v, the model needs %v", m.Path, p.Name, t.Shape, p.Shape)
		}
		data := t.F64
		if t.F32 != nil {
			buf = slices.Grow(buf[:0], len(t.F32))[:len(t.F32)]
			for i, v := range t.F32 {
				buf[i] = float64(v)
			}
			data = buf
		}
		if err := savedmodel.CheckValues(data, p); err != nil { // NaN would only show as garbage
			return fmt.Errorf("%s: tensor %s %v", m.Path, p.Name, err)
		}
		if err := p.SetFloat64s(data); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	return nil
}

// paramNames are the names of every parameter of a model of spec s, as
// graph.BuildTranslation declares them (TestParamNamesMatchTheGraph): Load
// refuses a file holding any other tensor, a model that says one thing and
// holds another. (Apply sees one part of the graph at a time, so it cannot.)
func paramNames(s graph.TranslationSpec) map[string]bool {
	names := map[string]bool{}
	add := func(prefix string, parts ...string) {
		for _, p := range parts {
			names[prefix+p+".weight"] = true
			names[prefix+p+".bias"] = true
		}
	}
	for _, side := range []string{"src", "tgt"} {
		names[side+"_tok.weight"] = true
		if s.Positions == "learned" {
			names[side+"_pos.weight"] = true
		}
	}
	for i := range s.EncoderBlocks {
		add(fmt.Sprintf("encoder.%d.", i), "norm1", "norm2", "att.q", "att.k", "att.v", "att.o", "ff.up", "ff.down")
	}
	for i := range s.DecoderBlocks {
		add(fmt.Sprintf("decoder.%d.", i), "norm1", "norm2", "norm3", "att.q", "att.k", "att.v", "att.o",
			"cross.q", "cross.k", "cross.v", "cross.o", "ff.up", "ff.down")
	}
	add("", "encoder.norm", "decoder.norm")
	if !s.TieEmbeddings {
		add("", "out")
	}
	return names
}

// checkNames refuses tensors that no parameter of the model is called.
func (m *Model) checkNames() error {
	want := paramNames(m.Spec)
	var extra []string
	for name := range m.Tensors {
		if !want[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	var b strings.Builder
	for i, name := range extra[:min(5, len(extra))] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote.Name(name))
	}
	if len(extra) > 5 {
		fmt.Fprintf(&b, " and %d more", len(extra)-5)
	}
	return fmt.Errorf("tensors that this model (its metadata) does not have: %s", b.String())
}
