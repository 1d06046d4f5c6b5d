package nanogpt

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/fidelity"
)

// idVocab is a vocabulary of GPT-2's size whose words are the token ids.
func idVocab(t *testing.T) *corpus.Vocab {
	t.Helper()
	tokens := make([]string, GPT2Vocab)
	for i := range tokens {
		tokens[i] = strconv.Itoa(i)
	}
	v, err := corpus.NewVocab(corpus.Word, tokens)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestImportPaddedGPT2: a checkpoint of nanoGPT's padded GPT-2 vocabulary
// (testdata/nanogpt/gpt2/make.py: 50,304 rows, no meta.pkl) imports with
// the first 50,257 rows, and the real tokens' logits are nanoGPT's.
func TestImportPaddedGPT2(t *testing.T) {
	dir := filepath.Join("..", "testdata", "nanogpt", "gpt2")
	m, err := ImportGPT2(filepath.Join(dir, "ckpt.pt"), idVocab(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Vocab != GPT2Vocab || m.Tensors[0].Name != "tok.weight" || m.Tensors[0].Shape[0] != GPT2Vocab || len(m.Tensors[0].F32) != GPT2Vocab*4 {
		t.Fatalf("vocab %d, first tensor %s %v", m.Spec.Vocab, m.Tensors[0].Name, m.Tensors[0].Shape)
	}
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		IDs    []int     `json:"ids"`
		At     []int     `json:"at"`
		Logits []float64 `json:"logits"`
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	out, err := fidelity.Forward(m.Spec, m.Tensors, want.IDs, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	last := out.Logits[(len(want.IDs)-1)*GPT2Vocab:]
	checked := 0
	for i, id := range want.At {
		if id >= GPT2Vocab {
			continue // a padded row: dropped
		}
		if d := math.Abs(last[id] - want.Logits[i]); d > 1e-5*math.Max(1, math.Abs(want.Logits[i])) {
			t.Errorf("logit of token %d: %v, nanoGPT's %v", id, last[id], want.Logits[i])
		}
		checked++
	}
	if checked != 20 {
		t.Errorf("checked %d logits, want 20", checked)
	}
}

// TestImportGPT2RefusesOtherVocabularies: a char model's checkpoint is not
// taken for a GPT-2 (its meta.pkl is what is missing).
func TestImportGPT2RefusesOtherVocabularies(t *testing.T) {
	_, err := ImportGPT2(ckpt, idVocab(t), 1)
	var ng *NotGPT2Error
	if !errors.As(err, &ng) || ng.Vocab != 55 {
		t.Fatalf("got %v, want a NotGPT2Error of 55 tokens", err)
	}
}
