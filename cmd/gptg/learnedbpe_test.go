package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/savedmodel"
)

// bpeConfig is a tiny float64 model over testdata/tiny.txt with a learned
// BPE of 300 tokens.
func bpeConfig(out, text string) string {
	return fmt.Sprintf(`[data]
path = %q
tokenizer = "bpe"
vocab_size = 300
stride = 4
[model]
context = 8
embedding = 8
blocks = 1
heads = 2
residual = true
norm = "pre"
ff_mult = 2
dtype = "float64"
[train]
batch = 2
max_steps = 6
log_every = 3
warmup = 0
out = %q
`, text, out)
}

// lastTestLoss is the test loss of a run's last metrics row.
func lastTestLoss(t *testing.T, run string) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var row struct {
		TestLoss float64 `json:"test_loss"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &row); err != nil {
		t.Fatal(err)
	}
	return row.TestLoss
}

func modelMerges(t *testing.T, run string) [][2]int {
	t.Helper()
	m, err := savedmodel.LoadMeta(filepath.Join(run, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Vocab.Kind() != corpus.BPE || m.Spec.Vocab != 300 {
		t.Fatalf("%s: a %s model of %d tokens", run, m.Vocab.Kind(), m.Spec.Vocab)
	}
	return m.Vocab.Merges()
}

// TestLearnedBPERun trains a tokenizer = "bpe" config, and checks that the
// model file holds the merges LearnBPE learns on the training split, that
// sample, eval and attention read them, that eval's test loss is the
// run's (the same test split, cut by bytes), that a resumed run keeps them,
// and that fine-tuning (--init) reads a new corpus with the model's merges
// instead of learning others.
func TestLearnedBPERun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte(bpeConfig("run", testmodel.TinyText())), 0o644); err != nil {
		t.Fatal(err)
	}
	out := ok(t, dir, "train", "c.toml")
	learned, err := corpus.LearnBPE(context.Background(), testmodel.TinyText(), 300, 0.9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("tokenizer bpe: learned 44 merges on the first %d bytes of ", learned.TrainBytes); !strings.Contains(out, want) {
		t.Errorf("train's output does not say %q:\n%s", want, out)
	}
	run := filepath.Join(dir, "run")
	if got := modelMerges(t, run); !slices.Equal(got, learned.Merges) {
		t.Fatalf("the model file's merges differ from LearnBPE's:\n%v\n%v", got, learned.Merges)
	}

	ok(t, dir, "sample", "run", "--tokens", "12", "--seed", "1")
	ok(t, dir, "attention", "run", "--text", "First Citizen:", "--format", "text")
	eval := ok(t, dir, "eval", "run")
	if want := fmt.Sprintf("test loss %.6f\n", lastTestLoss(t, run)); !strings.HasPrefix(eval, want) {
		t.Errorf("eval printed %q, the run's last test loss is %q", eval, want)
	}

	ok(t, dir, "train", "--resume", "run", "--set", "train.max_steps=9", "--quiet")
	if got := modelMerges(t, run); !slices.Equal(got, learned.Merges) {
		t.Fatal("the resumed run's merges differ")
	}

	// Fine-tuning on another text: the model's merges, not new ones.
	other := filepath.Join(dir, "other.txt")
	text, err := os.ReadFile("../../corpus/builtin/toy.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, text[:20000], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.toml"), []byte(bpeConfig("tuned", other)), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "train", "f.toml", "--init", "run", "--quiet")
	if got := modelMerges(t, filepath.Join(dir, "tuned")); !slices.Equal(got, learned.Merges) {
		t.Fatal("the fine-tuned run learned merges of its own instead of reading its corpus with the model's")
	}
}

// learnedBPEInputs are TestBadInputs' rows for tokenizer = "bpe".
func learnedBPEInputs(t *testing.T) []badInput {
	text, err := os.ReadFile(testmodel.TinyText())
	if err != nil {
		t.Fatal(err)
	}
	withConfig := func(toml string) map[string]string {
		return map[string]string{"t.txt": string(text), "c.toml": "[data]\npath = \"t.txt\"\n" + toml}
	}
	badMerges := func(merges string) map[string]string {
		var b strings.Builder
		meta := fmt.Sprintf(`{"__metadata__":{"format":"gptg/1","model":"{\"vocab\":257,\"context\":8,\"embedding\":8,\"blocks\":1,\"heads\":1}","tokenizer":"bpe","merges":%q}}`, merges)
		fmt.Fprintf(&b, "%s", string([]byte{byte(len(meta)), byte(len(meta) >> 8), 0, 0, 0, 0, 0, 0}))
		b.WriteString(meta)
		return map[string]string{"m.safetensors": b.String()}
	}
	return []badInput{
		{name: "bpe: vocab_size beyond the training split's pairs", files: withConfig("tokenizer = \"bpe\"\nvocab_size = 5000\n"),
			args: []string{"train", "c.toml"}, code: 2, msg: "c.toml: data.vocab_size: 5000 is more than the training split of t.txt can learn: its pairs run out after "},
		{name: "bpe: no vocab_size", files: withConfig("tokenizer = \"bpe\"\n"),
			args: []string{"train", "c.toml"}, code: 2, msg: `c.toml: data.vocab_size: is missing: tokenizer = "bpe" learns that many tokens on the training split`},
		{name: "bpe: vocab_size with the char tokenizer", files: withConfig("vocab_size = 512\n"),
			args: []string{"train", "c.toml"}, code: 2, msg: `c.toml: data.vocab_size: only tokenizer = "bpe" reads it (data.tokenizer is "char"`},
		{name: "bpe: model.vocab other than vocab_size", files: withConfig("tokenizer = \"bpe\"\nvocab_size = 300\n[model]\nvocab = 65\n"),
			args: []string{"train", "c.toml"}, code: 2, msg: "c.toml: model.vocab: is 65 but data.vocab_size is 300"},
		{name: "data bpe without --vocab-size", args: []string{"data", "bpe", "builtin:toy"}, code: 2,
			msg: "data bpe needs --vocab-size N (at least 256"},
		{name: "data bpe: a text that is not UTF-8", files: map[string]string{"x.txt": "abc d\xffe\n"},
			args: []string{"data", "bpe", "x.txt", "--vocab-size", "260"}, code: 2, msg: "x.txt: text is not valid UTF-8 (bad byte 0xff at offset 5)"},
		{name: "sample: bpe merges naming an id not made yet", files: badMerges("[[97,300]]"),
			args: []string{"sample", "m.safetensors"}, code: 1, msg: `m.safetensors: metadata "merges": merge 0 (97, 300) names an id not made before it (ids 0..255 are)`},
		{name: "sample: bpe merges of three ids", files: badMerges("[[97,98,99]]"),
			args: []string{"sample", "m.safetensors"}, code: 1, msg: `m.safetensors: metadata "merges": merge 0 has 3 ids, not 2 (left, right)`},
	}
}
