// Package nanogpt brings models trained by Karpathy's nanoGPT
// (github.com/karpathy/nanoGPT, model.py and train.py) into gptg.
//
// Import reads the checkpoint train.py writes (ckpt.pt, a torch.save zip
// archive) and the char-level vocabulary of data/shakespeare_char's
// prepare.py (meta.pkl), both pickles, without executing anything: see
// pickle.go. Its GPT module is gptg's pre-norm transformer with Q/K/V,
// heads, residuals, exact GELU, a final LayerNorm and the output layer tied
// to the token embedding; the weights are renamed and the fused c_attn
// projection is cut into gptg's q, k and v.
package nanogpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strings"

	"github.com/nlpodyssey/gopickle/types"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/savedmodel"
)

// InputError marks a checkpoint or meta.pkl that cannot be imported: a
// hostile, corrupt or foreign file, or one that is no nanoGPT model.
// The command turns it into exit code 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}

// Model is an imported checkpoint in gptg's layout.
type Model struct {
	Spec    config.Model
	Vocab   *corpus.Vocab
	Tensors []modelfile.Tensor // in the order gptg's graph declares them
}

// Import reads a nanoGPT checkpoint and its meta.pkl, within the default
// memory limit (config.DefaultMaxMemory GiB, and what the process may take).
func Import(ckptPath, metaPath string) (*Model, error) {
	return ImportWithin(ckptPath, metaPath, config.DefaultMaxMemory)
}

// ImportWithin is Import refusing, before reading the weights, a model
// whose conversion would need more than maxMemoryGiB or than the process
// may still take (see checkMemory).
func ImportWithin(ckptPath, metaPath string, maxMemoryGiB float64) (*Model, error) {
	vocab, err := ReadMeta(metaPath)
	if err != nil {
		return nil, err
	}
	c, err := openCheckpoint(ckptPath)
	if err != nil {
		return nil, asInput(err)
	}
	defer c.Close()
	m, err := convert(c, vocab, maxMemoryGiB)
	if err != nil {
		return nil, asInput(fmt.Errorf("%s: %w", quote.Name(ckptPath), err))
	}
	return m, nil
}

// GPT-2's tokenizer has 50,257 tokens; nanoGPT trains GPT-2 from scratch
// with vocab_size 50,304, padded to a multiple of 64 for faster matrix
// products on a GPU (model.py's GPTConfig).
const (
	GPT2Vocab       = 50257
	paddedGPT2Vocab = 50304
)

// NotGPT2Error is ImportGPT2's refusal of a checkpoint whose vocabulary is
// not GPT-2's: a char model whose meta.pkl is missing, most likely.
type NotGPT2Error struct{ Vocab int }

func (e *NotGPT2Error) Error() string {
	return fmt.Sprintf("the checkpoint's vocabulary has %d tokens, not GPT-2's %d (or nanoGPT's padded %d)", e.Vocab, GPT2Vocab, paddedGPT2Vocab)
}

// ImportGPT2 reads a nanoGPT checkpoint of GPT-2's vocabulary, one without
// a meta.pkl (nanoGPT's sample.py then encodes with tiktoken's GPT-2), with
// vocab, of GPT2Vocab tokens (corpus.NewGPT2Vocab), as its tokenizer. A checkpoint of nanoGPT's
// padded vocabulary (50,304) keeps the first 50,257 rows of its token
// embedding, and so of its tied output layer: the other 47 are no token's.
// No tokenizer produces their ids, so as inputs they are never read; as
// outputs they were never a target in training, and nanoGPT's sample.py
// could draw one only to fail decoding it. The real tokens' logits are
// unchanged; their probabilities lose the padded rows' share of the
// softmax, which training pushed towards zero.
func ImportGPT2(ckptPath string, vocab *corpus.Vocab, maxMemoryGiB float64) (*Model, error) {
	if vocab.Size() != GPT2Vocab {
		return nil, fmt.Errorf("ImportGPT2: a vocabulary of %d tokens, want %d", vocab.Size(), GPT2Vocab)
	}
	c, err := openCheckpoint(ckptPath)
	if err != nil {
		return nil, asInput(err)
	}
	defer c.Close()
	m, err := convert(c, vocab, maxMemoryGiB)
	var ng *NotGPT2Error
	if errors.As(err, &ng) {
		return nil, ng
	}
	if err != nil {
		return nil, asInput(fmt.Errorf("%s: %w", quote.Name(ckptPath), err))
	}
	return m, nil
}

// asInput marks err as the file's fault unless it is an I/O error such as
// a missing file, which stays a run-time failure.
func asInput(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &InputError{err}
}

// Save writes m as a gptg model file at path, replacing whatever is there
// (a link too: resolve a link the user named before, atomicfile.Target).
func (m *Model) Save(path string) error {
	meta, err := m.metadata()
	if err != nil {
		return err
	}
	return modelfile.WriteOwn(path, m.Tensors, meta)
}

// Encode writes m as a gptg model file to w.
func (m *Model) Encode(w io.Writer) error {
	meta, err := m.metadata()
	if err != nil {
		return err
	}
	return modelfile.WriteTo(w, m.Tensors, meta)
}

// metadata is the model file's metadata for m.
func (m *Model) metadata() (map[string]string, error) {
	spec, err := json.Marshal(m.Spec)
	if err != nil {
		return nil, err
	}
	meta := map[string]string{
		"format": savedmodel.Format, "model": string(spec),
		"tokenizer": m.Vocab.Kind(), "source": "nanoGPT checkpoint",
	}
	// GPT-2's vocabulary is built into gptg: its kind names it.
	if m.Vocab.Kind() != corpus.GPT2 {
		tokens, err := json.Marshal(m.Vocab.Tokens())
		if err != nil {
			return nil, err
		}
		meta["vocab"] = string(tokens)
	}
	return meta, nil
}

// ReadMeta reads the char vocabulary from the meta.pkl that nanoGPT's
// data/shakespeare_char/prepare.py writes: {"vocab_size", "itos", "stoi"}.
func ReadMeta(path string) (*corpus.Vocab, error) {
	// A regular file of bounded size only: a FIFO would block, /dev/zero
	// (whose size stat says is 0) would be read until memory ran out.
	data, err := inputfile.ReadFile(path, maxPickleSize)
	if err != nil {
		var ie *inputfile.Error
		if errors.As(err, &ie) {
			return nil, inputErr("%s: %s", quote.Name(path), ie.Problem)
		}
		return nil, err
	}
	return readMeta(path, data)
}

// readMeta is ReadMeta of the file's content.
func readMeta(path string, data []byte) (*corpus.Vocab, error) {
	path = quote.Name(path)
	v, err := unpickle(data, map[string]any{}, nil)
	if err != nil {
		return nil, inputErr("%s: %v", path, err)
	}
	_, d, ok := dictOf(v)
	if !ok || d["itos"] == nil {
		return nil, inputErr("%s: not a nanoGPT meta.pkl (no itos dictionary)", path)
	}
	itos, ok := d["itos"].(*types.Dict)
	if !ok {
		return nil, inputErr("%s: not a nanoGPT meta.pkl (itos is not a dictionary)", path)
	}
	// itos maps 0..n-1 to one-character strings.
	tokens := make([]string, itos.Len())
	for _, e := range *itos {
		i, ok := intOf(e.Key)
		s, isStr := e.Value.(string)
		if !ok || !isStr || i < 0 || i >= len(tokens) || tokens[i] != "" {
			return nil, inputErr("%s: itos is not a map from 0..%d to characters", path, len(tokens)-1)
		}
		tokens[i] = s
	}
	// nanoGPT encodes with stoi and decodes with itos: the two must be one
	// map read both ways, and vocab_size its size, or the imported model
	// would decode its own tokens to the wrong characters.
	if raw, ok := d["stoi"]; ok && raw != nil {
		stoi, ok := raw.(*types.Dict)
		if !ok || stoi.Len() != len(tokens) {
			return nil, inputErr("%s: stoi is not the inverse of itos (%d characters)", path, len(tokens))
		}
		for _, e := range *stoi {
			s, isStr := e.Key.(string)
			i, ok := intOf(e.Value)
			if !isStr || !ok || i < 0 || i >= len(tokens) || tokens[i] != s {
				to := quote.Value(fmt.Sprint(e.Value))
				if ok {
					to = fmt.Sprint(i)
				}
				return nil, inputErr("%s: stoi is not the inverse of itos (it maps %s to %s, itos does not)", path, quote.Value(fmt.Sprint(e.Key)), to)
			}
		}
	}
	if raw, ok := d["vocab_size"]; ok && raw != nil {
		if n, ok := intOf(raw); !ok {
			return nil, inputErr("%s: vocab_size is %s, not a number", path, quote.Value(fmt.Sprint(raw)))
		} else if n != len(tokens) {
			return nil, inputErr("%s: vocab_size is %d, but itos holds %d characters", path, n, len(tokens))
		}
	}
	vocab, err := corpus.NewVocab(corpus.Char, tokens)
	if err != nil {
		return nil, inputErr("%s: %v", path, err)
	}
	return vocab, nil
}

// modelArgs is train.py's model_args, the GPTConfig of the checkpoint.
type modelArgs struct {
	layers, heads, embedding, context, vocab int
	bias                                     bool
	dropout                                  float64
}

func readModelArgs(v any) (modelArgs, error) {
	var a modelArgs
	_, d, ok := dictOf(v)
	if !ok {
		return a, fmt.Errorf("model_args is not a dictionary")
	}
	ints := map[string]*int{"n_layer": &a.layers, "n_head": &a.heads, "n_embd": &a.embedding,
		"block_size": &a.context, "vocab_size": &a.vocab}
	for key, dst := range ints {
		n, ok := intOf(d[key])
		if !ok || n < 1 {
			return a, fmt.Errorf("model_args.%s is %s, not a positive integer", key, describe(d[key]))
		}
		*dst = n
	}
	if a.bias, ok = d["bias"].(bool); !ok {
		return a, fmt.Errorf("model_args.bias is %s, not a boolean", describe(d["bias"]))
	}
	switch x := d["dropout"].(type) {
	case float64:
		a.dropout = x
	case int:
		a.dropout = float64(x)
	case nil:
	default:
		return a, fmt.Errorf("model_args.dropout is %s, not a number", describe(x))
	}
	if math.IsNaN(a.dropout) || a.dropout < 0 || a.dropout >= 1 {
		return a, fmt.Errorf("model_args.dropout is %v, not a number in [0, 1)", a.dropout)
	}
	return a, nil
}

// describe names a pickled value in a message by its Python type as well
// as its value, so that the string '16' does not read as the number 16.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "missing"
	case string:
		return "the string " + quote.Value(x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case int:
		return fmt.Sprintf("%d", x)
	case *big.Int:
		return fmt.Sprintf("an integer of %d bits", x.BitLen())
	case float64:
		return fmt.Sprintf("the float %v", x)
	case *types.Dict, *types.OrderedDict:
		return "a dictionary"
	case *types.List:
		return "a list"
	case *types.Tuple:
		return "a tuple"
	case *tensorRef:
		return "a tensor"
	}
	return fmt.Sprintf("a %T", v)
}

// convert maps the checkpoint's state_dict to gptg's tensors: the model's
// settings from model_args, then each tensor of nanoGPT's GPT by name, then
// a check that nothing was left over, then one dtype for all.
func convert(c *checkpoint, vocab *corpus.Vocab, maxMemoryGiB float64) (*Model, error) {
	args, sd, keys, err := readStateDict(c)
	if err != nil {
		return nil, err
	}
	padded := args.vocab == paddedGPT2Vocab && vocab.Size() == GPT2Vocab
	switch {
	case vocab.Size() == GPT2Vocab && args.vocab != GPT2Vocab && !padded:
		return nil, &NotGPT2Error{args.vocab}
	case args.vocab != vocab.Size() && !padded:
		return nil, fmt.Errorf("the model has a vocabulary of %d tokens, meta.pkl has %d", args.vocab, vocab.Size())
	}
	spec, err := gptSpec(args)
	if err != nil {
		return nil, err
	}
	spec.Vocab = vocab.Size()
	if err := checkMemory(spec, sd, maxMemoryGiB); err != nil {
		return nil, err
	}
	cv := &converter{c: c, sd: sd, args: args, used: map[string]bool{}}
	if err := cv.takeAll(); err != nil {
		return nil, err
	}
	if err := cv.checkHeadTied(); err != nil {
		return nil, err
	}
	if err := cv.checkAllUsed(keys); err != nil {
		return nil, err
	}
	if padded { // the token embedding comes first: keep its first rows
		tok := &cv.tensors[0]
		tok.Shape = []int{GPT2Vocab, args.embedding}
		tok.F64 = tok.F64[:GPT2Vocab*args.embedding]
	}
	m := &Model{Spec: spec, Vocab: vocab, Tensors: cv.tensors}
	m.setDtype(cv.double)
	return m, nil
}

// checkMemory refuses, before any storage is read, a model whose
// conversion needs more memory than limitGiB or than the process may still
// take (ulimit -v, a cgroup's limit, the machine): the conversion holds every value as a
// float64, then the model's float32 copy and the file's encoding — about
// 16 bytes a parameter — beside the largest storage read at a time.
// Measured: a 600 MB checkpoint of a 50M-parameter model peaks at 810 MB
// RSS; this says 0.8 GiB. Without it such a model under a limit ends in
// the runtime's out-of-memory trace or the kernel's OOM kill.
func checkMemory(spec config.Model, sd map[string]*tensorRef, limitGiB float64) error {
	largest := 0.0
	for _, t := range sd {
		largest = max(largest, float64(t.storage.numel)*float64(t.storage.typ.size))
	}
	params := spec.ParamCount()
	e := config.MemoryEstimate{Params: params, Weights: 16 * float64(params), Activations: largest}
	return config.CheckMemory(e, limitGiB, "importing this model", "GPTG_MAX_MEMORY=")
}

// readStateDict finds train.py's model_args and the model's state_dict
// (its keys in the pickle's order, for messages).
func readStateDict(c *checkpoint) (modelArgs, map[string]*tensorRef, []string, error) {
	_, root, ok := dictOf(c.root)
	if !ok {
		return modelArgs{}, nil, nil, fmt.Errorf("the pickled object is not a dictionary: not a nanoGPT checkpoint")
	}
	if root["model"] == nil || root["model_args"] == nil {
		return modelArgs{}, nil, nil, fmt.Errorf("no \"model\" and \"model_args\" entries: not a checkpoint written by nanoGPT's train.py")
	}
	args, err := readModelArgs(root["model_args"])
	if err != nil {
		return modelArgs{}, nil, nil, err
	}
	keys, entries, ok := dictOf(root["model"])
	if !ok {
		return modelArgs{}, nil, nil, fmt.Errorf("\"model\" is not a state_dict")
	}
	// torch.compile wraps the model, and its state_dict keys, in _orig_mod.
	sd := map[string]*tensorRef{}
	for _, k := range keys {
		t, ok := entries[k].(*tensorRef)
		if !ok {
			return modelArgs{}, nil, nil, fmt.Errorf("state_dict entry %s is not a tensor", k)
		}
		sd[strings.TrimPrefix(k, "_orig_mod.")] = t
	}
	return args, sd, keys, nil
}

// gptSpec is gptg's model of nanoGPT's GPT with the checkpoint's
// model_args: pre-norm blocks, exact GELU, tied embeddings, GPT-2's init.
func gptSpec(args modelArgs) (config.Model, error) {
	spec := config.DefaultModel()
	spec.Vocab, spec.Context, spec.Embedding = args.vocab, args.context, args.embedding
	spec.Blocks, spec.Heads = args.layers, args.heads
	spec.QKV, spec.Mask, spec.OutProj, spec.Residual = true, true, true, true
	spec.Norm, spec.Activation, spec.FFMult = "pre", "gelu_exact", 4
	spec.TieEmbeddings, spec.Bias, spec.FinalNorm = true, args.bias, true
	spec.Init, spec.Dropout = "gpt2", args.dropout
	check := config.Default()
	check.Model = spec
	if err := check.Validate(); err != nil {
		return spec, fmt.Errorf("model_args: %v", strings.TrimPrefix(err.Error(), "config: "))
	}
	return spec, nil
}

// converter copies state_dict tensors into gptg's, in gptg's order,
// remembering which it used and whether any was float64.
type converter struct {
	c       *checkpoint
	sd      map[string]*tensorRef // state_dict by name, _orig_mod. trimmed
	args    modelArgs
	used    map[string]bool
	double  bool
	tensors []modelfile.Tensor
}

// takeAll takes every tensor of nanoGPT's GPT: the embeddings, each
// block, the final norm.
func (cv *converter) takeAll() error {
	V, T, C := cv.args.vocab, cv.args.context, cv.args.embedding
	if err := cv.take("tok.weight", "transformer.wte.weight", []int{V, C}, 0, 0); err != nil {
		return err
	}
	if err := cv.take("pos.weight", "transformer.wpe.weight", []int{T, C}, 0, 0); err != nil {
		return err
	}
	for i := 0; i < cv.args.layers; i++ {
		if err := cv.block(i); err != nil {
			return err
		}
	}
	return cv.norm("final_norm", "transformer.ln_f")
}

// block takes block i's tensors: transformer.h.i in nanoGPT, blocks.i in
// gptg.
func (cv *converter) block(i int) error {
	C := cv.args.embedding
	h, b := fmt.Sprintf("transformer.h.%d", i), fmt.Sprintf("blocks.%d", i)
	// The causal mask buffer of PyTorch < 2 (attn.bias, lower-triangular
	// ones) is not a parameter; gptg's mask switch is the same thing.
	cv.used[h+".attn.bias"] = true
	if err := cv.norm(b+".norm1", h+".ln_1"); err != nil {
		return err
	}
	if err := cv.attentionInputs(b, h); err != nil {
		return err
	}
	if err := cv.linear(b+".att.o", h+".attn.c_proj", C, C); err != nil {
		return err
	}
	if err := cv.norm(b+".norm2", h+".ln_2"); err != nil {
		return err
	}
	if err := cv.linear(b+".ff.up", h+".mlp.c_fc", 4*C, C); err != nil {
		return err
	}
	return cv.linear(b+".ff.down", h+".mlp.c_proj", C, 4*C)
}

// attentionInputs cuts c_attn, which is q, k and v stacked along the
// output axis, into gptg's three projections.
func (cv *converter) attentionInputs(b, h string) error {
	C := cv.args.embedding
	for j, part := range []string{"q", "k", "v"} {
		if err := cv.take(b+".att."+part+".weight", h+".attn.c_attn.weight", []int{C, C}, j*C, (j+1)*C); err != nil {
			return err
		}
		if cv.args.bias {
			if err := cv.take(b+".att."+part+".bias", h+".attn.c_attn.bias", []int{C}, j*C, (j+1)*C); err != nil {
				return err
			}
		}
	}
	return nil
}

// linear takes a linear layer's weight, and its bias when the model has
// biases.
func (cv *converter) linear(as, name string, out, in int) error {
	if err := cv.take(as+".weight", name+".weight", []int{out, in}, 0, 0); err != nil {
		return err
	}
	if cv.args.bias {
		return cv.take(as+".bias", name+".bias", []int{out}, 0, 0)
	}
	return nil
}

// norm takes a layer norm's gain, and its bias when the model has biases.
func (cv *converter) norm(as, name string) error {
	C := cv.args.embedding
	if err := cv.take(as+".weight", name+".weight", []int{C}, 0, 0); err != nil {
		return err
	}
	if cv.args.bias {
		return cv.take(as+".bias", name+".bias", []int{C}, 0, 0)
	}
	return nil
}

// take copies sd[name] (rows [from, to) of its first axis when to > 0)
// into the gptg tensor called as, refusing a wrong shape and any value
// that is not finite.
func (cv *converter) take(as, name string, shape []int, from, to int) error {
	t, ok := cv.sd[name]
	if !ok {
		return fmt.Errorf("state_dict has no %s", name)
	}
	cv.used[name] = true
	full := shape
	if to > 0 {
		full = append([]int{3 * cv.args.embedding}, shape[1:]...) // only c_attn is cut
	}
	if !equalShape(t.shape, full) {
		return fmt.Errorf("%s has shape %v, model_args say %v", name, t.shape, full)
	}
	data, isDouble, err := cv.c.readFloats(t)
	if err != nil {
		return err
	}
	cv.double = cv.double || isDouble
	if to > 0 {
		row := len(data) / full[0]
		data = data[from*row : to*row]
	}
	for i, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s holds %v at entry %d", name, v, i)
		}
	}
	cv.tensors = append(cv.tensors, modelfile.Tensor{Name: as, Shape: shape, F64: data})
	return nil
}

// checkHeadTied accepts lm_head only as wte's own storage (weight tying):
// gptg stores it once.
func (cv *converter) checkHeadTied() error {
	head, ok := cv.sd["lm_head.weight"]
	if !ok {
		return nil
	}
	cv.used["lm_head.weight"] = true
	wte := cv.sd["transformer.wte.weight"]
	if head.storage != wte.storage || head.offset != wte.offset || !equalShape(head.shape, wte.shape) {
		return fmt.Errorf("lm_head.weight is not tied to transformer.wte.weight; only tied models (nanoGPT's GPT) are imported")
	}
	return nil
}

// checkAllUsed refuses a state_dict with entries nanoGPT's GPT does not
// have: a changed model.py whose extra weights would be silently dropped.
func (cv *converter) checkAllUsed(keys []string) error {
	var extra []string
	for _, k := range keys {
		if name := strings.TrimPrefix(k, "_orig_mod."); !cv.used[name] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return fmt.Errorf("state_dict has entries nanoGPT's GPT does not: %s", strings.Join(extra, ", "))
	}
	return nil
}

// setDtype keeps float64 when any tensor of the checkpoint was float64,
// else stores every tensor as float32, the checkpoint's own precision.
func (m *Model) setDtype(double bool) {
	if double {
		m.Spec.Dtype = "float64"
		return
	}
	m.Spec.Dtype = "float32"
	for i, t := range m.Tensors {
		m.Tensors[i].F32 = make([]float32, len(t.F64))
		for j, v := range t.F64 {
			m.Tensors[i].F32[j] = float32(v)
		}
		m.Tensors[i].F64 = nil
	}
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
