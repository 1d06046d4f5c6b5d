package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
)

// hfConfig is what config.json says of a GPT-2 model's shape and maths.
type hfConfig struct {
	layers, heads, embedding, positions, vocab, inner int
	activation                                        string
	tied                                              bool
	dropout                                           float64
}

// harmless are config.json keys that do not change what GPT2LMHeadModel
// computes from its weights: generation defaults, the heads of other
// model classes (summary_*), labels, bookkeeping of the library. Any
// other key is either read below or refused by name: a setting that
// changed the maths and were skipped would give another model than the
// file's, silently.
var harmless = map[string]bool{
	"architectures": true, "model_type": true, "transformers_version": true, "_name_or_path": true,
	"torch_dtype": true, "dtype": true, "use_cache": true, "bos_token_id": true, "eos_token_id": true,
	"pad_token_id": true, "sep_token_id": true, "decoder_start_token_id": true,
	"initializer_range": true, "task_specific_params": true, "output_past": true,
	"summary_activation": true, "summary_first_dropout": true, "summary_proj_to_labels": true,
	"summary_type": true, "summary_use_proj": true, "id2label": true, "label2id": true,
	"_num_labels": true, "num_labels": true, "problem_type": true, "gradient_checkpointing": true,
	"output_attentions": true, "output_hidden_states": true, "return_dict": true, "torchscript": true,
	"predict_special_tokens": true, "max_length": true, "do_sample": true, "temperature": true,
	"top_k": true, "top_p": true, "repetition_penalty": true, "num_beams": true, "finetuning_task": true,
	"tokenizer_class": true, "prefix": true, "is_encoder_decoder": true, "is_decoder": true,
	"_attn_implementation_autoset": true, "attn_implementation": true, "_attn_implementation": true,
	"chunk_size_feed_forward": true, "tie_encoder_decoder": true, "use_return_dict": true,
}

// readConfig reads config.json: a GPT-2 (model_type "gpt2") whose every
// setting gptg's model can compute, or an error naming the key that is
// not.
func readConfig(path string, data []byte) (hfConfig, error) {
	var c hfConfig
	fail := func(format string, args ...any) (hfConfig, error) {
		return c, &InputError{fmt.Errorf("%s: "+format, append([]any{quote.Name(path)}, args...)...)}
	}
	if err := modelfile.UniqueKeys(data); err != nil || !json.Valid(data) {
		return fail("not a JSON object: %v", cmpErr(err, "invalid JSON"))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fail("not a JSON object")
	}
	if err := checkModelType(fields); err != nil {
		return fail("%v", err)
	}
	r := reader{fields: fields, used: map[string]bool{}}
	if err := r.shape(&c); err != nil {
		return fail("%v", err)
	}
	if err := r.maths(&c); err != nil {
		return fail("%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !r.used[k] && !harmless[k] {
			return fail("%s is a setting gptg does not know, so cannot say it leaves the model's maths alone: remove it if it does", quote.Value(k))
		}
	}
	if c.heads > c.embedding || c.embedding%c.heads != 0 {
		return fail("n_head %d does not divide n_embd %d", c.heads, c.embedding)
	}
	return c, nil
}

// checkModelType refuses a config.json that is not a GPT-2 language
// model's, before any of its sizes are read.
func checkModelType(fields map[string]json.RawMessage) error {
	var mt string
	if err := json.Unmarshal(fields["model_type"], &mt); err != nil || mt != "gpt2" {
		if fields["model_type"] == nil {
			return fmt.Errorf("no model_type: not a Hugging Face model's config.json (gptg imports GPT-2, model_type \"gpt2\")")
		}
		return fmt.Errorf("model_type is %s, not \"gpt2\": gptg imports GPT-2 models only", abbreviate(fields["model_type"]))
	}
	if raw, ok := fields["architectures"]; ok && !isNull(raw) {
		var archs []string
		if err := json.Unmarshal(raw, &archs); err != nil {
			return fmt.Errorf("architectures is %s, not a list of class names", abbreviate(raw))
		}
		for _, a := range archs {
			if a != "GPT2LMHeadModel" && a != "GPT2Model" {
				return fmt.Errorf("architectures names %s: gptg imports GPT2LMHeadModel (a language model), not a GPT-2 with another head", quote.Value(a))
			}
		}
	}
	return nil
}

// shape reads the model's sizes into c: the layers, heads, widths,
// context and vocabulary.
func (r *reader) shape(c *hfConfig) error {
	c.layers = r.positive("n_layer")
	c.heads = r.positive("n_head")
	c.embedding = r.positive("n_embd")
	c.positions = r.positive("n_positions")
	c.vocab = r.positive("vocab_size")
	if r.err != nil {
		return r.err
	}
	// n_ctx is GPT-2's first name for n_positions; the library reads
	// n_positions alone. Two different values are a config to question.
	if raw, ok := r.fields["n_ctx"]; ok {
		r.used["n_ctx"] = true
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n != c.positions {
			return fmt.Errorf("n_ctx is %s but n_positions is %d: which is the context?", abbreviate(raw), c.positions)
		}
	}
	c.inner = 4 * c.embedding
	if raw, ok := r.fields["n_inner"]; ok && !isNull(raw) {
		c.inner = r.positive("n_inner")
		if r.err != nil {
			return r.err
		}
	}
	r.used["n_inner"] = true
	if c.inner%c.embedding != 0 {
		return fmt.Errorf("n_inner %d is not a multiple of n_embd %d (gptg's feed-forward is ff_mult × embedding wide)", c.inner, c.embedding)
	}
	return nil
}

// maths checks that every setting that changes what the model computes
// (activation, layer norm, attention scaling, tying, dropout) is one gptg's
// model has, and reads those into c.
func (r *reader) maths(c *hfConfig) error {
	c.activation = "gelu_new"
	if raw, ok := r.fields["activation_function"]; ok {
		r.used["activation_function"] = true
		if err := json.Unmarshal(raw, &c.activation); err != nil {
			return fmt.Errorf("activation_function is %s, not a name", abbreviate(raw))
		}
	}
	if _, ok := activations[c.activation]; !ok {
		return fmt.Errorf("activation_function is %s, which gptg does not have (it has gelu_new, gelu_pytorch_tanh, gelu and relu)", quote.Value(c.activation))
	}
	// gptg's LayerNorm is PyTorch's default, eps 1e-5, GPT-2's.
	if eps, ok := r.number("layer_norm_epsilon"); ok && eps != 1e-5 {
		return fmt.Errorf("layer_norm_epsilon is %v; gptg's layer norm uses 1e-5, GPT-2's", eps)
	}
	wants := []struct {
		key  string
		want bool
		why  string
	}{
		{"scale_attn_weights", true, "gptg scales attention scores by 1/√(head width), as GPT-2 does"},
		{"scale_attn_by_inverse_layer_idx", false, "gptg does not scale attention by the block's index"},
		{"add_cross_attention", false, "gptg's GPT has no cross-attention"},
	}
	for _, w := range wants {
		if b, ok := r.boolean(w.key); ok && b != w.want {
			return fmt.Errorf("%s is %v: %s", w.key, b, w.why)
		}
	}
	// Reordering and upcasting only change the precision of fp16 runs;
	// in float32 the attention is the same.
	r.boolean("reorder_and_upcast_attn")
	c.tied = true
	if b, ok := r.boolean("tie_word_embeddings"); ok {
		c.tied = b
	}
	if n, ok := r.number("n_special"); ok && n != 0 {
		return fmt.Errorf("n_special is %v: gptg imports GPT-2 without extra special-token embeddings", n)
	}
	if raw, ok := r.fields["pruned_heads"]; ok {
		r.used["pruned_heads"] = true
		if s := strings.TrimSpace(string(raw)); s != "{}" && s != "null" {
			return fmt.Errorf("pruned_heads is %s: gptg imports models whose blocks have all their heads", abbreviate(raw))
		}
	}
	// Dropout acts in training only; gptg has one rate for all three.
	var rates []float64
	for _, k := range []string{"embd_pdrop", "attn_pdrop", "resid_pdrop"} {
		if p, ok := r.number(k); ok {
			rates = append(rates, p)
		}
	}
	if len(rates) > 0 {
		c.dropout = rates[0]
		for _, p := range rates[1:] {
			if p != c.dropout {
				return fmt.Errorf("embd_pdrop, attn_pdrop and resid_pdrop differ; gptg has one dropout rate (model.dropout) for all three")
			}
		}
	}
	return r.err
}

// activations maps activation_function to gptg's model.activation.
var activations = map[string]string{
	"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu": "gelu_exact", "relu": "relu",
}

// reader takes typed values out of config.json, remembering the keys
// read and the first error.
type reader struct {
	fields map[string]json.RawMessage
	used   map[string]bool
	err    error
}

func (r *reader) positive(key string) int {
	r.used[key] = true
	raw, ok := r.fields[key]
	var n int
	if !ok {
		r.setErr(fmt.Errorf("no %s", key))
		return 0
	}
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
		r.setErr(fmt.Errorf("%s is %s, not a positive integer", key, abbreviate(raw)))
	}
	return n
}

func (r *reader) number(key string) (float64, bool) {
	r.used[key] = true
	raw, ok := r.fields[key]
	if !ok || isNull(raw) {
		return 0, false
	}
	var x float64
	if err := json.Unmarshal(raw, &x); err != nil || math.IsNaN(x) {
		r.setErr(fmt.Errorf("%s is %s, not a number", key, abbreviate(raw)))
		return 0, false
	}
	return x, true
}

func (r *reader) boolean(key string) (bool, bool) {
	r.used[key] = true
	raw, ok := r.fields[key]
	if !ok || isNull(raw) {
		return false, false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		r.setErr(fmt.Errorf("%s is %s, not true or false", key, abbreviate(raw)))
		return false, false
	}
	return b, true
}

func (r *reader) setErr(err error) {
	if r.err == nil {
		r.err = err
	}
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// abbreviate quotes a JSON value for a message, cut short.
func abbreviate(raw json.RawMessage) string {
	return quote.Value(string(bytes.TrimSpace(raw)))
}

func cmpErr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// spec is gptg's model of a GPT-2 of this config: pre-norm blocks with
// Q/K/V, the causal mask, residuals, biases, learned positions, a final
// LayerNorm and the output layer tied to the token embedding.
func (c hfConfig) spec() (config.Model, error) {
	s := config.DefaultModel()
	s.Vocab, s.Context, s.Embedding = c.vocab, c.positions, c.embedding
	s.Blocks, s.Heads = c.layers, c.heads
	s.QKV, s.Mask, s.OutProj, s.Residual = true, true, true, true
	s.Norm, s.Activation, s.FFMult = "pre", activations[c.activation], c.inner/c.embedding
	s.TieEmbeddings, s.Bias, s.FinalNorm = true, true, true
	s.Init, s.Dropout, s.Dtype = "gpt2", c.dropout, "float32"
	check := config.Default()
	check.Model = s
	if err := check.Validate(); err != nil {
		return s, fmt.Errorf("config.json: %v", strings.TrimPrefix(err.Error(), "config: "))
	}
	return s, nil
}
