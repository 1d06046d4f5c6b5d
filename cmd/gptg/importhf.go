package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/hf"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/nanogpt"
)

const hfUsage = `Reads a Hugging Face GPT-2 folder (GPT2LMHeadModel: gpt2, gpt2-medium,
gpt2-large, gpt2-xl, distilgpt2 and models of their kind) and writes a gptg
model file. The folder holds config.json and model.safetensors (or the
shards model.safetensors.index.json lists), as save_pretrained writes it
and as the Hub serves it (huggingface-cli download gpt2 --local-dir gpt2;
the Hub's cache keeps it under ~/.cache/huggingface/hub/models--gpt2/
snapshots/<revision>/).

The model becomes gptg's pre-norm transformer with the switches that make
it GPT-2 (activation = "gelu", the tanh approximation of gelu_new;
tie_embeddings, final_norm, bias, learned positions); c_attn is cut into
q, k and v and every Conv1D weight, stored (in, out), is transposed to
gptg's (out, in). F32, F16 and BF16 weights are read and stored as
float32. The attn.bias and attn.masked_bias buffers are the causal mask:
checked, not imported; an lm_head.weight must equal wte.weight (the output
layer is tied). A config.json setting that would change the maths and
that gptg's model lacks is refused by name, as is a missing, extra or
misshapen tensor.

Flags:
  --out FILE         the model file to write (default: the folder's name
                     with .safetensors, here; - for standard output)
  --tokenizer KIND   auto (the default): GPT-2's when the model has its
                     50,257 tokens and the folder's vocab.json and
                     merges.txt (or tokenizer.json), if any, are GPT-2's
                     (checked token by token and merge by merge), else ids;
                     gpt2: GPT-2's, or an error saying why not;
                     ids: the model reads and writes token ids, written as
                     decimal numbers separated by spaces (gptg sample
                     --prompt "464 2068 7586")
  --force            replace an existing file
`

// runImportHF is gptg import hf DIR.
func runImportHF(pos []string, out string, force bool, tokenizer string, stdout io.Writer) error {
	if len(pos) != 1 {
		return usagef("import hf needs exactly one folder, got %d arguments", len(pos))
	}
	dir := pos[0]
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return usagef("%s: no such folder", quote.Name(dir))
	case err != nil:
		return err
	case !info.IsDir():
		return usagef("%s is not a folder: import hf reads a Hugging Face model folder (config.json, model.safetensors)", quote.Name(dir))
	}
	if tokenizer != "auto" && tokenizer != "gpt2" && tokenizer != "ids" {
		return usagef("--tokenizer %s: want auto, gpt2 or ids", quote.Value(tokenizer))
	}
	if out == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		out = filepath.Base(abs) + ".safetensors"
	}
	inputs := []string{filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors")}
	if err := checkOutput("--out", out, atomicfile.Rules{Force: force, Inputs: inputs}); err != nil {
		return err
	}
	target := out
	if !atomicfile.IsStdout(out) {
		if target, err = atomicfile.Target(out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	limit, err := importMemoryLimit()
	if err != nil {
		return err
	}
	m, err := hf.Import(dir, limit)
	if err != nil {
		return err
	}
	meta, tokNote, err := hfVocabulary(m, tokenizer)
	if err != nil {
		return err
	}
	if atomicfile.IsStdout(out) {
		return writeOutput(out, stdout, func(w io.Writer) error { return m.Encode(w, meta) })
	}
	if err := m.Save(target, meta); err != nil {
		return err
	}
	s := m.Spec
	wrote(stdout, out, ": %d blocks, %d heads, embedding %d, context %d, vocab %d, %s parameters, %s",
		s.Blocks, s.Heads, s.Embedding, s.Context, s.Vocab, groupDigits(s.ParamCount()), s.Dtype)
	for _, n := range append(m.Notes, tokNote) {
		fmt.Fprintf(stdout, "  %s\n", n)
	}
	return nil
}

// hfVocabulary is the model file's tokenizer for an imported GPT-2, and a
// line saying which and why. GPT-2's own (gptg's byte-level BPE) when the
// model has its 50,257 tokens and the folder's tokenizer files, if any,
// are GPT-2's; token ids otherwise, or when asked (--tokenizer ids): a
// word vocabulary whose words are the ids "0".."V-1".
func hfVocabulary(m *hf.Model, want string) (map[string]string, string, error) {
	files := ""
	for _, n := range []string{"vocab.json", "merges.txt", "tokenizer.json"} {
		if m.Tokenizer[n] != "" {
			files += ", " + n
		}
	}
	files = strings.TrimPrefix(files, ", ")
	gpt2 := want != "ids" && m.Spec.Vocab == nanogpt.GPT2Vocab
	var why error
	if gpt2 && files != "" {
		if why = m.CheckGPT2Tokenizer(); why != nil {
			gpt2 = false
		}
	}
	switch {
	case want == "gpt2" && m.Spec.Vocab != nanogpt.GPT2Vocab:
		return nil, "", usagef("--tokenizer gpt2: the model has %d tokens, GPT-2's tokenizer %d", m.Spec.Vocab, nanogpt.GPT2Vocab)
	case want == "gpt2" && why != nil:
		return nil, "", &hf.InputError{Err: fmt.Errorf("--tokenizer gpt2: the folder's tokenizer is not GPT-2's: %v", why)}
	case gpt2:
		v, err := corpus.NewGPT2Vocab()
		if err != nil {
			return nil, "", err
		}
		meta, err := vocabMeta(v)
		note := "tokenizer: GPT-2's (the folder's " + files + " are GPT-2's)"
		if files == "" {
			note = "tokenizer: GPT-2's (the folder has no tokenizer files; the model has GPT-2's 50,257 tokens)"
		}
		return meta, note, err
	}
	v, err := idVocabulary(m.Spec.Vocab)
	if err != nil {
		return nil, "", err
	}
	meta, err := vocabMeta(v)
	note := "tokenizer: token ids (prompts are ids separated by spaces)"
	switch {
	case want == "ids":
	case why != nil:
		note += ": the folder's tokenizer is not GPT-2's (" + oneLine(why.Error()) + ")"
	default:
		note += fmt.Sprintf(": the model has %d tokens, not GPT-2's %d", m.Spec.Vocab, nanogpt.GPT2Vocab)
	}
	return meta, note, err
}

// idVocabulary is the vocabulary of n token ids, a word vocabulary whose
// words are "0".."n-1": a prompt or a corpus is its ids separated by
// spaces, and a sample prints ids.
func idVocabulary(n int) (*corpus.Vocab, error) {
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = strconv.Itoa(i)
	}
	return corpus.NewVocab(corpus.Word, tokens)
}

// groupDigits writes n with thousands separators: 124,439,808.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// vocabMeta is a model file's tokenizer metadata for v: its kind, and
// its tokens unless they are built into gptg (GPT-2's).
func vocabMeta(v *corpus.Vocab) (map[string]string, error) {
	meta := map[string]string{"tokenizer": v.Kind()}
	if v.Kind() == corpus.GPT2 {
		return meta, nil
	}
	tokens, err := json.Marshal(v.Tokens())
	if err != nil {
		return nil, err
	}
	meta["vocab"] = string(tokens)
	return meta, nil
}
