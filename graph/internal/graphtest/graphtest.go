// Package graphtest holds what the tests of graph, graph/fused and
// graph/tape share: the kernel family they run on (Main), the two emitters
// every exactness test runs (Paths), a small model with every switch on
// (SmallSpec), random batches and what a run computed (Outputs). Only test
// files import it.
package graphtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// Main runs a package's tests on the matrix-product kernels that
// GPTG_TEST_KERNELS names (one of gemm.Paths: "AVX-512", "AVX2", "Go"),
// so that the golden, finite-difference and fused-against-unfused tests
// can be run on each family this CPU has (.ci/run does, for AVX2); unset,
// the fastest. `-tags purego` builds the plain-Go twins of every assembly
// routine instead (GELU and AdamW as well). A package's TestMain calls it.
func Main(m *testing.M) {
	name := os.Getenv("GPTG_TEST_KERNELS")
	if name == "" {
		os.Exit(m.Run())
	}
	if !slices.Contains(gemm.Paths(), name) {
		fmt.Fprintf(os.Stderr, "GPTG_TEST_KERNELS=%q: this machine's kernel families are %q\n", name, gemm.Paths())
		os.Exit(2)
	}
	restore := gemm.Use(name)
	code := m.Run()
	restore()
	os.Exit(code)
}

// Paths are the two graphs every exactness test runs on: the fused
// kernels and the composition from Gorgonia's primitives.
var Paths = []struct {
	Name    string
	Unfused bool
}{{"fused", false}, {"unfused", true}}

// RandomBatch draws n token ids and n target ids below vocab, in pairs.
func RandomBatch(rng *rand.Rand, vocab, n int) (x, y []int) {
	x, y = make([]int, n), make([]int, n)
	for i := range x {
		x[i], y[i] = rng.IntN(vocab), rng.IntN(vocab)
	}
	return x, y
}

// SmallSpec is a float32 model of vocabulary 9, context 6, embedding 8
// and two blocks of two heads, with every switch on that changes the
// graph; norm places its layer norms ("pre" or "post").
func SmallSpec(norm string) config.Model {
	return config.Model{Bias: true, Init: "torch", Vocab: 9, Context: 6, Embedding: 8, Blocks: 2, Heads: 2, FFMult: 2, QKV: true, Mask: true,
		OutProj: true, Residual: true, Norm: norm, Activation: "gelu", Dtype: "float32"}
}

// Outputs is what a training run computed, for comparisons bit for bit:
// its loss, its logits, every gradient and every attention map, as
// float64s (a float32 converts exactly).
func Outputs(loss float64, logits *G.Node, grads, attention []*G.Node) [][]float64 {
	out := [][]float64{{loss}}
	for _, n := range append(append([]*G.Node{logits}, grads...), attention...) {
		switch x := n.Value().Data().(type) {
		case []float32:
			v := make([]float64, len(x))
			for i, f := range x {
				v[i] = float64(f)
			}
			out = append(out, v)
		case []float64:
			out = append(out, slices.Clone(x))
		default:
			panic(fmt.Sprintf("graphtest.Outputs: %s holds %T", n.Name(), x))
		}
	}
	return out
}

// SameBits says whether two Outputs hold the same float64 bits (−0 is
// not 0).
func SameBits(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(u, v float64) bool { return math.Float64bits(u) == math.Float64bits(v) })
	})
}
