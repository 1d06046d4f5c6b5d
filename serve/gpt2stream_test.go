package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
)

// GPT-2 spells ’ (U+2019, bytes E2 80 99) as two tokens, neither a whole
// character: 447 is E2 80, 247 is 99.
const (
	quoteHead = 447
	quoteTail = 247
)

// writeQuoteModel saves a GPT-2-shaped model of GPT-2's vocabulary that
// draws, greedily, 447 at even positions' next token and 247 at odd ones',
// whatever the text: its blocks are zero (the residual stream is the token
// and position embeddings), the positions' embeddings ±100 along (1, −1, 0,
// 0) outweigh the tokens', and the tied output layer gives only the two
// tokens a logit other than 0.
func writeQuoteModel(t *testing.T, path string) {
	t.Helper()
	vocab, err := corpus.NewGPT2Vocab()
	if err != nil {
		t.Fatal(err)
	}
	spec := config.DefaultModel()
	spec.Vocab, spec.Context, spec.Embedding, spec.Blocks, spec.Heads = vocab.Size(), 32, 4, 1, 1
	spec.QKV, spec.Mask, spec.OutProj, spec.Residual = true, true, true, true
	spec.Norm, spec.Activation, spec.FFMult = "pre", "gelu", 4
	spec.TieEmbeddings, spec.Bias, spec.FinalNorm = true, true, true
	spec.Init, spec.Dropout, spec.Dtype = "gpt2", 0, "float32"
	g, err := graph.Build(spec, graph.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range g.Params {
		v := make([]float64, p.Size())
		switch {
		case strings.Contains(p.Name, "norm") && strings.HasSuffix(p.Name, "weight"), strings.Contains(p.Name, "ln") && strings.HasSuffix(p.Name, "weight"):
			for i := range v {
				v[i] = 1 // layer norm gains
			}
		case p.Shape[0] == spec.Vocab: // the token embedding, tied to the output layer
			copy(v[quoteHead*4:], []float64{1, -1, 0, 0})
			copy(v[quoteTail*4:], []float64{-1, 1, 0, 0})
			found++
		case p.Shape[0] == spec.Context && len(p.Shape) == 2: // the positions
			for pos := 0; pos < spec.Context; pos++ {
				sign := 1.0
				if pos%2 == 1 {
					sign = -1
				}
				copy(v[pos*4:], []float64{100 * sign, -100 * sign, 0, 0})
			}
			found++
		}
		if err := p.SetFloat64s(v); err != nil {
			t.Fatal(err)
		}
	}
	if found != 2 {
		t.Fatalf("found %d of the token and position embeddings among %d parameters", found, len(g.Params))
	}
	if err := savedmodel.Save(path, spec, vocab, g.Params); err != nil {
		t.Fatal(err)
	}
}

// TestGenerateGPT2HalfCharacters: the playground of a GPT-2-vocabulary
// model streams whole characters only: a ’ drawn as its two tokens is one
// event, never the first token's half character; "done" counts the
// tokens drawn, not the events.
func TestGenerateGPT2HalfCharacters(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	os.MkdirAll(filepath.Join(runs, "gpt2"), 0o755)
	writeQuoteModel(t, filepath.Join(runs, "gpt2", train.ModelFile))
	s := newServer(t, Options{Dirs: []string{runs}})
	w := post(s, "/api/generate", `{"id":"runs/gpt2","prompt":"Hello","tokens":10,"temperature":0}`)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var toks []string
	evs := events(w.Body.String())
	for _, e := range evs {
		if e[0] == "token" {
			var tok string
			if err := json.Unmarshal([]byte(e[1]), &tok); err != nil {
				t.Fatal(err)
			}
			toks = append(toks, tok)
		}
	}
	// "Hello" is one token, at position 0: the tokens drawn are 447 247
	// 447 247 ..., five ’.
	want := []string{"’", "’", "’", "’", "’"}
	if strings.Join(toks, "|") != strings.Join(want, "|") {
		t.Errorf("streamed %q, want %q", toks, want)
	}
	for _, tok := range toks {
		if !utf8.ValidString(tok) || strings.ContainsRune(tok, utf8.RuneError) {
			t.Errorf("event %q is not whole characters", tok)
		}
	}
	if last := evs[len(evs)-1]; last[0] != "done" || !strings.Contains(last[1], `"tokens":10`) {
		t.Errorf("last event %v, want done with the 10 tokens drawn", last)
	}
	// An odd count ends inside the last ’: its two bytes left are U+FFFD
	// each, as Go's range over a string reads them.
	w = post(s, "/api/generate", `{"id":"runs/gpt2","prompt":"Hello","tokens":3,"temperature":0}`)
	var all strings.Builder
	for _, e := range events(w.Body.String()) {
		if e[0] == "token" {
			var tok string
			json.Unmarshal([]byte(e[1]), &tok)
			all.WriteString(tok)
		}
	}
	if all.String() != "’\uFFFD\uFFFD" {
		t.Errorf("3 tokens streamed %q, want ’ and U+FFFD for each byte of the half character left", all.String())
	}
}
