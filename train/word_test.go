package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
)

// TestWordModelLearnsToyGrammar trains a small word-level causal model on
// the toy grammar (seed 001's experiment) and requires most sampled
// sentences to be grammatical; an untrained model gets nearly none right.
func TestWordModelLearnsToyGrammar(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "toy.txt")
	if err := os.WriteFile(data, []byte(corpus.ToySentences(2000, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.Data.Path, c.Data.Tokenizer = data, corpus.Word
	c.Model = config.Model{Bias: true, Init: "torch", Context: 16, Embedding: 32, Blocks: 2, Heads: 2, QKV: true, Mask: true, OutProj: true,
		Residual: true, Norm: "pre", Activation: "gelu", FFMult: 2, Dtype: "float32"}
	c.Train.Batch, c.Train.MaxSteps, c.Train.LR, c.Train.MinLR, c.Train.Warmup = 8, 2000, 3e-3, 3e-4, 50
	c.Train.LogEvery, c.Train.Out = 100, filepath.Join(dir, "run")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), c, Options{}); err != nil {
		t.Fatal(err)
	}
	m, err := savedmodel.Load(filepath.Join(c.Train.Out, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Meta["tokenizer"] != "word" || m.Vocab.Kind() != "word" {
		t.Fatalf("model file tokenizer %q", m.Meta["tokenizer"])
	}
	s, err := sample.New(m, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text strings.Builder
	text.WriteString(".")
	err = s.Generate(".", sample.Options{Tokens: 200, Temperature: 1, Seed: 1}, func(w string) error {
		if !strings.HasPrefix(w, " ") {
			t.Fatalf("word %q not joined with a space", w)
		}
		text.WriteString(w)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every complete sentence lies between two full stops.
	parts := strings.Split(text.String(), ".")
	sentences := parts[1 : len(parts)-1]
	good := 0
	for _, snt := range sentences {
		if corpus.IsToySentence(strings.Fields(snt)) {
			good++
		}
	}
	if len(sentences) < 10 || float64(good) < 0.8*float64(len(sentences)) {
		t.Fatalf("%d of %d sampled sentences are grammatical:\n%s", good, len(sentences), text.String())
	}
	t.Logf("%d of %d sampled sentences are grammatical", good, len(sentences))
}
