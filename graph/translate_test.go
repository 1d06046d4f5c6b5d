package graph_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
)

// translationCase is one golden file of testdata/translate, made by
// mkgolden.py from PyTorch's nn.Transformer.
type translationCase struct {
	Name      string                   `json:"name"`
	Model     graph.TranslationSpec    `json:"model"`
	Batch     int                      `json:"batch"`
	Src       [][]int                  `json:"src"`
	DecIn     [][]int                  `json:"dec_in"`
	DecTgt    [][]int                  `json:"dec_tgt"`
	Params    map[string]golden.Tensor `json:"params"`
	Logits    golden.Tensor            `json:"logits"`
	Loss      float64                  `json:"loss"`
	Grads     map[string][]float64     `json:"grads"`
	ZeroGrads []string                 `json:"zero_grads"`
}

func loadTranslationCases(t *testing.T) []*translationCase {
	t.Helper()
	files, err := filepath.Glob("../testdata/translate/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in testdata/translate (%v)", err)
	}
	var cases []*translationCase
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := &translationCase{}
		if err := json.Unmarshal(raw, c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, c)
	}
	return cases
}

// TestTranslationGolden builds each golden case's encoder–decoder, loads
// PyTorch's parameters, runs one forward and backward pass and compares
// logits, loss and every gradient, by the golden files' rule: float64
// ‖a−b‖/‖b‖ ≤ 1e-9 (zero_grads: ‖a‖ ≤ 1e-9·‖all gradients‖); float32 ≤
// 1e-4 with gradient denominators floored at 1e-3·‖all gradients‖.
func TestTranslationGolden(t *testing.T) {
	for _, path := range graphtest.Paths {
		t.Run(path.Name, func(t *testing.T) {
			for _, c := range loadTranslationCases(t) {
				t.Run(c.Name, func(t *testing.T) {
					for _, dtype := range []string{"float64", "float32"} {
						t.Run(dtype, func(t *testing.T) { checkTranslationGolden(t, c, dtype, graph.Backend{Unfused: path.Unfused}) })
					}
				})
			}
		})
	}
}

func checkTranslationGolden(t *testing.T, c *translationCase, dtype string, be graph.Backend) {
	tol := 1e-9
	if dtype == "float32" {
		tol = 1e-4
	}
	spec := c.Model
	spec.Dtype = dtype
	m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: c.Batch, SrcLen: len(c.Src[0]), TgtLen: len(c.DecIn[0]), Loss: true, Logits: true, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tape.CompileTranslation(m, true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	setGoldenParams(t, m.Params, c.Params)
	if err := p.Run(golden.Flat(c.Src), golden.Flat(c.DecIn), golden.Flat(c.DecTgt)); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want []float64, floor float64) {
		t.Helper()
		if e := golden.RelErr(got, want, floor); !(e <= tol) {
			t.Errorf("%s: relative error %.3g > %.0g", what, e, tol)
		}
	}
	check("logits", graph.Float64s(m.Logits.Value()), c.Logits.Data, 0)
	check("loss", []float64{p.Loss()}, []float64{c.Loss}, 0)

	var all []float64
	for _, g := range c.Grads {
		all = append(all, g...)
	}
	gradNorm := golden.Norm(all)
	zero := map[string]bool{}
	for _, n := range c.ZeroGrads {
		zero[n] = true
	}
	for i, prm := range m.Params {
		got := graph.Float64s(p.Grads[i].Value())
		want := c.Grads[prm.Name]
		switch {
		case zero[prm.Name] && dtype == "float64":
			if n := golden.Norm(got); n > 1e-9*gradNorm {
				t.Errorf("grad %s: ‖g‖ = %.3g, want ≤ 1e-9·%.3g (zero in exact arithmetic)", prm.Name, n, gradNorm)
			}
		case dtype == "float32":
			check("grad "+prm.Name, got, want, 1e-3*gradNorm)
		default:
			check("grad "+prm.Name, got, want, 0)
		}
	}
}

// TestTranslationPartsEqualWhole runs a golden case's model as one graph
// and as an encoder graph feeding a decoder graph (translation's way):
// the logits must be the same bits.
func TestTranslationPartsEqualWhole(t *testing.T) {
	c := loadTranslationCases(t)[0]
	for _, path := range graphtest.Paths {
		spec := c.Model
		spec.Dtype = "float64"
		S, T := len(c.Src[0]), len(c.DecIn[0])
		build := func(part string) *tape.TranslationProgram {
			m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: c.Batch, SrcLen: S, TgtLen: T, Part: part,
				Backend: graph.Backend{Unfused: path.Unfused}})
			if err != nil {
				t.Fatal(err)
			}
			for _, prm := range m.Params {
				if err := prm.SetFloat64s(c.Params[prm.Name].Data); err != nil {
					t.Fatal(err)
				}
			}
			p, err := tape.CompileTranslation(m, false)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		whole, enc, dec := build(""), build("encoder"), build("decoder")
		src, decIn := golden.Flat(c.Src), golden.Flat(c.DecIn)
		if err := whole.Run(src, decIn, nil); err != nil {
			t.Fatal(err)
		}
		if err := enc.Run(src, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := dec.SetMemory(graph.Float64s(enc.Memory.Value())); err != nil {
			t.Fatal(err)
		}
		if err := dec.Run(src, decIn, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := graph.Float64s(dec.Logits.Value()), graph.Float64s(whole.Logits.Value()); !slices.Equal(got, want) {
			t.Errorf("%s: the decoder graph's logits differ from the whole graph's", path.Name)
		}
		if golden.RelErr(graph.Float64s(whole.Logits.Value()), c.Logits.Data, 0) > 1e-9 {
			t.Errorf("%s: the whole forward graph's logits differ from the golden file's", path.Name)
		}
	}
}

// TestTranslationFusedOps checks that the fused graph runs the fused
// kernels the golden tests are meant to cover: one masked attention per
// encoder block and per cross-attention, the fused causal attention per
// decoder block, the fused loss and both embeddings.
func TestTranslationFusedOps(t *testing.T) {
	c := loadTranslationCases(t)[0]
	spec := c.Model
	spec.Dtype = "float32"
	m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: c.Batch, SrcLen: len(c.Src[0]), TgtLen: len(c.DecIn[0]), Loss: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Logits != nil {
		t.Error("the fused loss graph computes the logits of every row; only the loss's rows were wanted")
	}
	count := map[string]int{}
	for _, n := range m.G.AllNodes() {
		if n.Op() != nil {
			count[n.Op().String()]++
		}
	}
	want := map[string]int{
		"MaskedAttentionWeights": spec.EncoderBlocks + spec.DecoderBlocks,
		"AttentionWeights":       spec.DecoderBlocks,
		"OutputLoss":             1,
		"ScaledEmbedding":        2,
	}
	for kind, n := range want {
		if count[kind] != n {
			t.Errorf("%d %s ops, want %d", count[kind], kind, n)
		}
	}
}
