package graph

import (
	"math"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestFusedScaledEmbeddingAt: the step graph's embedding, fused and
// composed from primitives, gives the same bits (the same two roundings
// per entry) in both dtypes, for rows that repeat a token and rows at
// different positions.
func TestFusedScaledEmbeddingAt(t *testing.T) {
	tokens, positions := []int{3, 0, 3, 6}, []int{2, 2, 0, 4}
	for _, dtype := range []string{"float32", "float64"} {
		var outs [2][]float64
		for i, unfused := range []bool{false, true} {
			spec := layerSpec
			spec.Dtype = dtype
			b := newBuilder(spec, Options{Batch: len(tokens), SeqLen: 1, Seed: 4, Backend: Backend{Unfused: unfused}})
			tok := b.param("tok", normal, spec.Vocab, spec.Embedding)
			pos := b.param("pos", normal, spec.Context, spec.Embedding)
			ids := func(name string, v []int) *G.Node {
				return G.NewVector(b.g, tensor.Int, G.WithShape(len(v)), G.WithName(name),
					G.WithValue(tensor.New(tensor.WithBacking(slices.Clone(v)))))
			}
			x := b.op.ScaledEmbeddingAt(ids("tokens", tokens), ids("positions", positions), tok, pos, math.Sqrt(6))
			vm := G.NewTapeMachine(b.g)
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			outs[i] = Float64s(x.Value())
			if got, want := x.Shape(), (tensor.Shape{len(tokens), spec.Embedding}); !got.Eq(want) {
				t.Fatalf("%s unfused=%v: shape %v, want %v", dtype, unfused, got, want)
			}
			vm.Close()
		}
		if !slices.Equal(outs[0], outs[1]) {
			t.Errorf("%s: the fused rows differ from the composed ones", dtype)
		}
	}
}
