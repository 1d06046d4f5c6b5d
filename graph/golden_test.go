package graph_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/gemm"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
)

// TestGolden builds every golden case's model, loads its parameters, runs one
// forward and backward pass and compares logits, loss, attention weights and
// every gradient with the PyTorch reference, in float64 and in float32, for
// the fused graph and the unfused one (subtests fused/…, unfused/…).
//
// Tolerances are the golden files' rule: float64 ‖a−b‖/‖b‖ ≤ 1e-9 (a gradient
// listed in zero_grads: ‖a‖ ≤ 1e-9·‖all gradients‖); float32 ≤ 1e-4 with the
// gradient denominators floored at 1e-3·‖all gradients‖.
func TestGolden(t *testing.T) { runGolden(t, golden.Dir()) }

// TestGoldenOtherSizes runs cases of another shape, made with
// gptref.py golden --out testdata/golden-sizes --seed-offset 50 --vocab 11
// --context 6 --embedding 12 --blocks 3 --batch 2 (4 heads of size 3).
func TestGoldenOtherSizes(t *testing.T) { runGolden(t, "../testdata/golden-sizes") }

// TestGoldenNanoGPT runs cases made by nanoGPT's own model.py
// (testdata/nanogpt/make.py): tied and untied output, with and without
// biases, final LayerNorm, exact GELU, vocab 11, context 6, embedding 12,
// 2 blocks of 2 heads, batch 3.
func TestGoldenNanoGPT(t *testing.T) { runGolden(t, "../testdata/nanogpt/golden") }

// TestGoldenOnEveryKernelPath runs the golden cases on the fused graph
// with each other family of matrix-product kernels this machine has
// (TestGolden ran the fastest): on a Zen 4 or Skylake-SP, AVX2 and the
// plain Go twins that -tags purego builds.
func TestGoldenOnEveryKernelPath(t *testing.T) {
	cases, err := golden.Load(golden.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range gemm.Paths()[1:] {
		t.Run(path, func(t *testing.T) {
			defer gemm.Use(path)()
			for _, c := range cases {
				for _, dtype := range []string{"float64", "float32"} {
					t.Run(c.Name+"/"+dtype, func(t *testing.T) { checkGolden(t, c, dtype, false) })
				}
			}
		})
	}
}

func runGolden(t *testing.T, dir string) {
	cases, err := golden.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range graphtest.Paths {
		t.Run(path.Name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					for _, dtype := range []string{"float64", "float32"} {
						t.Run(dtype, func(t *testing.T) { checkGolden(t, c, dtype, path.Unfused) })
					}
				})
			}
		})
	}
}

// setGoldenParams gives every parameter of a graph its value in a golden
// file, which must hold the same parameters with the same shapes.
func setGoldenParams(t *testing.T, params []*graph.Param, want map[string]golden.Tensor) {
	t.Helper()
	if len(params) != len(want) {
		t.Fatalf("graph has %d parameters, golden file %d", len(params), len(want))
	}
	for _, prm := range params {
		w, ok := want[prm.Name]
		if !ok {
			t.Fatalf("parameter %s is not in the golden file", prm.Name)
		}
		if !slices.Equal(prm.Shape, w.Shape) {
			t.Fatalf("%s: shape %v, golden %v", prm.Name, prm.Shape, w.Shape)
		}
		if err := prm.SetFloat64s(w.Data); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenRun is what one forward and backward pass of a golden case's
// model computed.
type goldenRun struct {
	logits    []float64
	loss      float64
	attention [][]float64 // the attention weights, by block
	params    []string    // the graph's parameters, in its order
	grads     [][]float64 // their gradients, in the same order
}

// runGoldenCase builds c's model of spec with build and backend, gives it
// the golden parameters and runs one forward and backward pass on the
// case's inputs and targets.
func runGoldenCase(t *testing.T, c *golden.Case, build func(config.Model, graph.Options) (*graph.Model, error), spec config.Model, backend graph.Backend) goldenRun {
	t.Helper()
	m, err := build(spec, graph.Options{Batch: c.Batch, Loss: true, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tape.Compile(m, true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	setGoldenParams(t, m.Params, c.Params)
	if err := p.Run(golden.Flat(c.Inputs), golden.Flat(c.Targets)); err != nil {
		t.Fatal(err)
	}
	r := goldenRun{logits: graph.Float64s(m.Logits.Value()), loss: p.Loss()}
	for _, a := range m.Attention {
		r.attention = append(r.attention, graph.Float64s(a.Value()))
	}
	for i, prm := range m.Params {
		r.params = append(r.params, prm.Name)
		r.grads = append(r.grads, graph.Float64s(p.Grads[i].Value()))
	}
	return r
}

func checkGolden(t *testing.T, c *golden.Case, dtype string, unfused bool) {
	tol := 1e-9
	if dtype == "float32" {
		tol = 1e-4
	}
	spec := c.Model
	spec.Dtype = dtype
	r := runGoldenCase(t, c, graph.Build, spec, graph.Backend{Unfused: unfused})

	check := func(what string, got, want []float64, floor float64) {
		t.Helper()
		if e := golden.RelErr(got, want, floor); !(e <= tol) {
			t.Errorf("%s: relative error %.3g > %.0g", what, e, tol)
		}
	}
	check("logits", r.logits, c.Logits.Data, 0)
	check("loss", []float64{r.loss}, []float64{c.Loss}, 0)
	if len(r.attention) != len(c.AttentionWeights) {
		t.Fatalf("%d attention nodes, golden %d", len(r.attention), len(c.AttentionWeights))
	}
	for i, a := range r.attention {
		check("attention weights of block "+strconv.Itoa(i), a, c.AttentionWeights[i], 0)
	}

	var all []float64
	for _, g := range c.Grads {
		all = append(all, g...)
	}
	gradNorm := golden.Norm(all)
	zero := map[string]bool{}
	for _, n := range c.ZeroGrads {
		zero[n] = true
	}
	for i, name := range r.params {
		got := r.grads[i]
		want := c.Grads[name]
		switch {
		case zero[name] && dtype == "float64":
			if n := golden.Norm(got); n > 1e-9*gradNorm {
				t.Errorf("grad %s: ‖g‖ = %.3g, want ≤ 1e-9·%.3g (zero in exact arithmetic)", name, n, gradNorm)
			}
		case dtype == "float32":
			check("grad "+name, got, want, 1e-3*gradNorm)
		default:
			check("grad "+name, got, want, 0)
		}
	}
}
