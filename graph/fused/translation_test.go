package fused_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
)

// TestTranslationThreadsSameBits runs one golden case's fused graph, with
// dropout, on 1, 2 and 3 threads with every job split however small, and
// requires the same bits for the loss, the logits and every gradient.
func TestTranslationThreadsSameBits(t *testing.T) {
	defer fused.SplitEverything()()
	c := firstTranslationCase(t)
	for _, dtype := range []string{"float32", "float64"} {
		var first []float64
		for _, threads := range []int{1, 2, 3} {
			spec := c.Model
			spec.Dtype, spec.Dropout = dtype, 0.2
			m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: c.Batch, SrcLen: len(c.Src[0]), TgtLen: len(c.DecIn[0]),
				Loss: true, Logits: true, Dropout: true, Seed: 7, Backend: graph.Backend{Threads: threads}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := tape.CompileTranslation(m, true)
			if err != nil {
				t.Fatal(err)
			}
			m.SetDropout(3, 1)
			if err := p.Run(golden.Flat(c.Src), golden.Flat(c.DecIn), golden.Flat(c.DecTgt)); err != nil {
				t.Fatal(err)
			}
			got := append([]float64{p.Loss()}, graph.Float64s(m.Logits.Value())...)
			for _, g := range p.Grads {
				got = append(got, graph.Float64s(g.Value())...)
			}
			p.Close()
			if first == nil {
				first = got
				continue
			}
			if !slices.Equal(got, first) {
				t.Errorf("%s: %d threads give other bits than 1", dtype, threads)
			}
		}
	}
}

// translationCase is the part of a golden file of testdata/translate
// (graph's translate_test.go reads all of it) that a run needs.
type translationCase struct {
	Model  graph.TranslationSpec `json:"model"`
	Batch  int                   `json:"batch"`
	Src    [][]int               `json:"src"`
	DecIn  [][]int               `json:"dec_in"`
	DecTgt [][]int               `json:"dec_tgt"`
}

// firstTranslationCase reads the first golden file of testdata/translate.
func firstTranslationCase(t *testing.T) *translationCase {
	t.Helper()
	files, err := filepath.Glob("../../testdata/translate/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in testdata/translate (%v)", err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	c := &translationCase{}
	if err := json.Unmarshal(raw, c); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return c
}
