// Package hf brings Hugging Face GPT-2 models into gptg: a folder as
// save_pretrained writes it (or as the Hub serves it) with config.json
// and model.safetensors (or the shards model.safetensors.index.json
// lists) becomes gptg's model and weights.
//
// GPT2LMHeadModel is gptg's pre-norm transformer with Q/K/V, biases,
// learned positions, a final LayerNorm and the output layer tied to the
// token embedding; gelu_new is gptg's "gelu" (the tanh approximation).
// Its linear layers are Conv1D modules, whose weights are stored (in,
// out), the transpose of nn.Linear's (out, in) that gptg stores; c_attn
// holds q, k and v side by side along its output axis. The attn.bias and
// attn.masked_bias buffers some files carry are the causal mask, not
// weights: they are checked, not imported.
package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/savedmodel"
)

// InputError marks a folder that cannot be imported: no GPT-2, a
// setting gptg's model cannot compute, a missing, extra or misshapen
// tensor, a damaged file. The command turns it into exit code 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Model is an imported GPT-2 in gptg's layout.
type Model struct {
	Spec    config.Model
	Tensors []modelfile.Tensor // float32, in the order gptg's graph declares them
	// Tokenizer lists the tokenizer files the folder holds (vocab.json,
	// merges.txt, tokenizer.json), for the caller to check against GPT-2's.
	Tokenizer map[string]string // file name → path
	// Notes say what the import found and did, one line each, for the
	// command to print (tied lm_head, mask buffers, dtype converted).
	Notes []string
}

// maxConfig bounds config.json (GPT-2's is under 1 KB).
const maxConfig = 1 << 20

// Import reads the GPT-2 in folder dir, refusing before any weight is
// read a model whose conversion would take more than maxMemoryGiB or than
// the process may still take.
func Import(dir string, maxMemoryGiB float64) (*Model, error) {
	cfgPath := filepath.Join(dir, "config.json")
	data, err := inputfile.ReadFile(cfgPath, maxConfig)
	if err != nil {
		return nil, asInput(err)
	}
	c, err := readConfig(cfgPath, data)
	if err != nil {
		return nil, err
	}
	spec, err := c.spec()
	if err != nil {
		return nil, &InputError{fmt.Errorf("%s: %v", quote.Name(cfgPath), err)}
	}
	files, err := openWeights(dir)
	if err != nil {
		return nil, asInput(err)
	}
	defer files.Close()
	if err := checkMemory(spec, files, maxMemoryGiB); err != nil {
		return nil, err
	}
	cv := &converter{w: files, c: c, used: map[string]bool{}}
	if err := cv.convert(); err != nil {
		return nil, asInput(err)
	}
	m := &Model{Spec: spec, Tensors: cv.tensors, Notes: cv.notes, Tokenizer: map[string]string{}}
	for _, name := range []string{"vocab.json", "merges.txt", "tokenizer.json"} {
		if p := filepath.Join(dir, name); exists(p) {
			m.Tokenizer[name] = p
		}
	}
	return m, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// asInput marks err as the folder's fault unless it is an I/O error such
// as a missing file, which stays a run-time failure.
func asInput(err error) error {
	var pe *os.PathError
	var ie *InputError
	if errors.As(err, &pe) || errors.As(err, &ie) {
		return err
	}
	return &InputError{err}
}

// checkMemory refuses, before any weight is read, an import that needs
// more memory than limitGiB or than the process may still take: the
// model's float32 weights, held until the file is written, beside the
// largest tensor read at a time and its transpose, and a tenth of the
// weights for what the runtime holds beyond the live values.
func checkMemory(spec config.Model, w *weights, limitGiB float64) error {
	largest := 0.0
	for _, t := range w.tensors {
		largest = max(largest, float64(t.end-t.begin)/float64(elemSize[t.dtype]))
	}
	params := spec.ParamCount()
	e := config.MemoryEstimate{Params: params, Weights: 4 * float64(params), Activations: 8*largest + 0.1*4*float64(params)}
	return config.CheckMemory(e, limitGiB, "importing this model", "GPTG_MAX_MEMORY=")
}

// weights are a checkpoint's tensors, in one file or in shards, by name
// with the "transformer." prefix of GPT2LMHeadModel's state_dict taken
// off (GPT2Model's, and the Hub's gpt2 file, have none).
type weights struct {
	files   []*stFile
	tensors map[string]stTensor
	file    map[string]*stFile
	keys    map[string]string // name without the prefix → the file's key
}

func (w *weights) Close() {
	for _, f := range w.files {
		f.Close()
	}
}

// openWeights opens model.safetensors, or the shards that
// model.safetensors.index.json lists.
func openWeights(dir string) (*weights, error) {
	w := &weights{tensors: map[string]stTensor{}, file: map[string]*stFile{}, keys: map[string]string{}}
	single := filepath.Join(dir, "model.safetensors")
	index := filepath.Join(dir, "model.safetensors.index.json")
	var names []string
	var weightMap map[string]string
	switch {
	case exists(single):
		names = []string{"model.safetensors"}
	case exists(index):
		var err error
		if names, weightMap, err = readIndex(index); err != nil {
			return nil, err
		}
	default:
		if exists(filepath.Join(dir, "pytorch_model.bin")) {
			return nil, &InputError{fmt.Errorf("%s holds pytorch_model.bin but no model.safetensors: gptg reads safetensors files (save the model again with save_pretrained(dir, safe_serialization=True))", quote.Name(dir))}
		}
		return nil, &InputError{fmt.Errorf("%s has no model.safetensors (nor model.safetensors.index.json): not a Hugging Face model folder", quote.Name(dir))}
	}
	for _, name := range names {
		st, err := openST(filepath.Join(dir, name))
		if err != nil {
			w.Close()
			return nil, err
		}
		w.files = append(w.files, st)
		for _, key := range st.order {
			name := strings.TrimPrefix(key, "transformer.")
			if other, ok := w.keys[name]; ok {
				w.Close()
				return nil, &InputError{fmt.Errorf("%s: tensors %s and %s are the same weight twice", quote.Name(st.path), quote.Value(other), quote.Value(key))}
			}
			if weightMap != nil && weightMap[key] != filepath.Base(st.path) {
				w.Close()
				return nil, &InputError{fmt.Errorf("%s: tensor %s is here, but %s puts it in %s", quote.Name(st.path), quote.Value(key), quote.Name(index), quote.Name(weightMap[key]))}
			}
			w.keys[name], w.tensors[name], w.file[name] = key, st.tensors[key], st
		}
	}
	for key, file := range weightMap {
		if _, ok := w.keys[strings.TrimPrefix(key, "transformer.")]; !ok {
			w.Close()
			return nil, &InputError{fmt.Errorf("%s: tensor %s is not in %s, where the index puts it", quote.Name(index), quote.Value(key), quote.Name(file))}
		}
	}
	return w, nil
}

// readIndex reads model.safetensors.index.json: the shard files, each
// once, in name order, and the map of tensor to shard.
func readIndex(path string) ([]string, map[string]string, error) {
	data, err := inputfile.ReadFile(path, 64<<20)
	if err != nil {
		return nil, nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := modelfile.UniqueKeys(data); err != nil {
		return nil, nil, &InputError{fmt.Errorf("%s: %v", quote.Name(path), err)}
	}
	if err := json.Unmarshal(data, &index); err != nil || len(index.WeightMap) == 0 {
		return nil, nil, &InputError{fmt.Errorf("%s: no weight_map of tensor names to shard files", quote.Name(path))}
	}
	seen := map[string]bool{}
	for _, file := range index.WeightMap {
		if file != filepath.Base(file) || file == "." || file == ".." || !strings.HasSuffix(file, ".safetensors") {
			return nil, nil, &InputError{fmt.Errorf("%s: shard %s is not a .safetensors file in the model's folder", quote.Name(path), quote.Value(file))}
		}
		seen[file] = true
	}
	return slices.Sorted(maps.Keys(seen)), index.WeightMap, nil
}

// converter reads the checkpoint's tensors into gptg's, in gptg's order,
// remembering which it used.
type converter struct {
	w       *weights
	c       hfConfig
	used    map[string]bool
	tensors []modelfile.Tensor
	notes   []string
	// scratch holds a Conv1D weight while it is transposed into gptg's:
	// one buffer for all, not a model's worth of garbage (for GPT-2 xl,
	// 0.9 GB more at the peak).
	scratch []float32
}

// convert takes every tensor of GPT2LMHeadModel, then checks the
// buffers and lm_head, then that nothing was left over.
func (cv *converter) convert() error {
	V, T, C := cv.c.vocab, cv.c.positions, cv.c.embedding
	wte, err := cv.take("tok.weight", "wte.weight", []int{V, C})
	if err != nil {
		return err
	}
	if _, err := cv.take("pos.weight", "wpe.weight", []int{T, C}); err != nil {
		return err
	}
	masks := 0
	for i := range cv.c.layers {
		n, err := cv.block(i)
		if err != nil {
			return err
		}
		masks += n
	}
	if err := cv.norm("final_norm", "ln_f"); err != nil {
		return err
	}
	if err := cv.lmHead(wte); err != nil {
		return err
	}
	if masks > 0 {
		cv.notes = append(cv.notes, fmt.Sprintf("%d attn.bias/masked_bias buffers are the causal mask: checked, not imported", masks))
	}
	dtypes := map[string]bool{}
	for name := range cv.used {
		if t, ok := cv.w.tensors[name]; ok {
			dtypes[t.dtype] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dtypes)) {
		if d != "F32" && d != "BOOL" && d != "U8" {
			cv.notes = append(cv.notes, fmt.Sprintf("%s weights converted to float32 (exactly)", d))
		}
	}
	return cv.checkAllUsed()
}

// block takes block i's tensors (h.i in GPT-2, blocks.i in gptg) and
// returns how many mask buffers it checked.
func (cv *converter) block(i int) (int, error) {
	C, H := cv.c.embedding, cv.c.inner
	h, b := fmt.Sprintf("h.%d", i), fmt.Sprintf("blocks.%d", i)
	masks, err := cv.masks(h)
	if err != nil {
		return 0, err
	}
	if err := cv.norm(b+".norm1", h+".ln_1"); err != nil {
		return 0, err
	}
	// c_attn is (C, 3C): q, k and v side by side along the output axis.
	if err := cv.conv1D(h+".attn.c_attn", C, 3*C, b+".att.q", b+".att.k", b+".att.v"); err != nil {
		return 0, err
	}
	if err := cv.conv1D(h+".attn.c_proj", C, C, b+".att.o"); err != nil {
		return 0, err
	}
	if err := cv.norm(b+".norm2", h+".ln_2"); err != nil {
		return 0, err
	}
	if err := cv.conv1D(h+".mlp.c_fc", C, H, b+".ff.up"); err != nil {
		return 0, err
	}
	return masks, cv.conv1D(h+".mlp.c_proj", H, C, b+".ff.down")
}

// conv1D takes a Conv1D layer, whose weight is (in, width), as gptg's
// linear layers parts (one, or q, k and v of equal width side by side):
// each part's columns of the weight transposed to (out, in), and its part
// of the bias.
func (cv *converter) conv1D(name string, in, width int, parts ...string) error {
	w, err := cv.readInto(cv.scratch, name+".weight", []int{in, width})
	if err != nil {
		return err
	}
	cv.scratch = w
	bias, err := cv.read(name+".bias", []int{width})
	if err != nil {
		return err
	}
	out := width / len(parts)
	for j, as := range parts {
		wt := make([]float32, out*in)
		for r := range in {
			for o, v := range w[r*width+j*out : r*width+(j+1)*out] {
				wt[o*in+r] = v
			}
		}
		cv.tensors = append(cv.tensors,
			modelfile.Tensor{Name: as + ".weight", Shape: []int{out, in}, F32: wt},
			modelfile.Tensor{Name: as + ".bias", Shape: []int{out}, F32: bias[j*out : (j+1)*out : (j+1)*out]})
	}
	return nil
}

// norm takes a LayerNorm's gain and bias.
func (cv *converter) norm(as, name string) error {
	C := cv.c.embedding
	if _, err := cv.take(as+".weight", name+".weight", []int{C}); err != nil {
		return err
	}
	_, err := cv.take(as+".bias", name+".bias", []int{C})
	return err
}

// take copies a tensor whose layout is gptg's as it is.
func (cv *converter) take(as, name string, shape []int) ([]float32, error) {
	data, err := cv.read(name, shape)
	if err != nil {
		return nil, err
	}
	cv.tensors = append(cv.tensors, modelfile.Tensor{Name: as, Shape: shape, F32: data})
	return data, nil
}

// read reads a weight as float32s, refusing a missing one, a wrong shape
// and any value that is not finite.
func (cv *converter) read(name string, shape []int) ([]float32, error) {
	return cv.readInto(nil, name, shape)
}

// readInto is read into buf when it is large enough.
func (cv *converter) readInto(buf []float32, name string, shape []int) ([]float32, error) {
	t, err := cv.lookup(name, shape)
	if err != nil {
		return nil, err
	}
	if t.dtype == "BOOL" || t.dtype == "U8" {
		return nil, fmt.Errorf("%s: tensor %s is %s, not a floating-point weight", quote.Name(cv.w.file[name].path), quote.Value(cv.w.keys[name]), t.dtype)
	}
	return cv.w.file[name].float32sInto(buf, t)
}

// lookup finds a tensor and checks its shape.
func (cv *converter) lookup(name string, shape []int) (stTensor, error) {
	t, ok := cv.w.tensors[name]
	if !ok {
		return t, fmt.Errorf("the checkpoint has no tensor %s (nor transformer.%s), which a GPT-2 of this config.json has", quote.Value(name), name)
	}
	cv.used[name] = true
	if !slices.Equal(t.shape, shape) {
		return t, fmt.Errorf("%s: tensor %s has shape %v, config.json says %v", quote.Name(cv.w.file[name].path), quote.Value(cv.w.keys[name]), t.shape, shape)
	}
	return t, nil
}

// masks checks block h's mask buffers when the file has them: attn.bias
// is the (1, 1, n_positions, n_positions) lower triangle of ones that
// GPT2Attention registers as its causal mask, and attn.masked_bias the
// single value (-1e4) older versions filled the masked scores with. gptg
// masks the same positions (model.mask); a file whose attn.bias masked
// others would compute something else, and is refused.
func (cv *converter) masks(h string) (int, error) {
	n := 0
	if _, ok := cv.w.tensors[h+".attn.masked_bias"]; ok {
		if _, err := cv.lookup(h+".attn.masked_bias", []int{}); err != nil {
			return 0, err
		}
		n++
	}
	name := h + ".attn.bias"
	if _, ok := cv.w.tensors[name]; !ok {
		return n, nil
	}
	T := cv.c.positions
	t, err := cv.lookup(name, []int{1, 1, T, T})
	if err != nil {
		return 0, err
	}
	f := cv.w.file[name]
	err = f.each(t, func(i int, v float64) error {
		row, col := i/T, i%T
		if want := col <= row; (v == 1) != want || (v != 0 && v != 1) {
			return fmt.Errorf("%s: tensor %s is not GPT-2's causal mask: entry (%d, %d) is %v, want %v",
				quote.Name(f.path), quote.Value(cv.w.keys[name]), row, col, v, map[bool]int{true: 1, false: 0}[want])
		}
		return nil
	})
	return n + 1, err
}

// lmHead accepts lm_head.weight only as a copy of wte.weight: gptg's
// output layer is the token embedding itself. Most files leave it out
// (save_pretrained stores tied weights once).
func (cv *converter) lmHead(wte []float32) error {
	const name = "lm_head.weight"
	if _, ok := cv.w.tensors[name]; !ok {
		if !cv.c.tied {
			return errors.New("config.json says tie_word_embeddings = false, but the checkpoint has no lm_head.weight")
		}
		return nil
	}
	head, err := cv.read(name, []int{cv.c.vocab, cv.c.embedding})
	if err != nil {
		return err
	}
	for i, v := range head {
		if v != wte[i] {
			return fmt.Errorf("%s: lm_head.weight differs from wte.weight (entry %d: %v, not %v); gptg imports GPT-2 with its output layer tied to the token embedding",
				quote.Name(cv.w.file[name].path), i, v, wte[i])
		}
	}
	cv.notes = append(cv.notes, "lm_head.weight equals wte.weight: stored once, tied")
	return nil
}

// checkAllUsed refuses tensors GPT2LMHeadModel of this config does not
// have: a layer more than n_layer, another head, weights of another
// model that would be silently dropped.
func (cv *converter) checkAllUsed() error {
	var extra []string
	for _, f := range cv.w.files {
		for _, key := range f.order {
			if !cv.used[strings.TrimPrefix(key, "transformer.")] {
				extra = append(extra, key)
			}
		}
	}
	if len(extra) == 0 {
		return nil
	}
	shown := extra[:min(len(extra), 5)]
	more := ""
	if len(extra) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(extra)-len(shown))
	}
	return fmt.Errorf("the checkpoint has tensors a GPT-2 of this config.json does not: %s%s", strings.Join(quoteAll(shown), ", "), more)
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = quote.Value(x)
	}
	return out
}

// Encode writes m as a gptg model file to w, with the vocabulary's
// metadata (tokenizer kind and tokens) the caller chose.
func (m *Model) Encode(w io.Writer, meta map[string]string) error {
	return modelfile.WriteTo(w, m.Tensors, m.metadata(meta))
}

// Save writes m as a gptg model file at path (modelfile.WriteOwn: the
// file appears whole or not at all).
func (m *Model) Save(path string, meta map[string]string) error {
	return modelfile.WriteOwn(path, m.Tensors, m.metadata(meta))
}

func (m *Model) metadata(vocab map[string]string) map[string]string {
	spec, _ := json.Marshal(m.Spec) // a struct of plain fields: cannot fail
	meta := map[string]string{"format": savedmodel.Format, "model": string(spec), "source": "Hugging Face GPT-2"}
	maps.Copy(meta, vocab)
	return meta
}
