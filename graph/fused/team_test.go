package fused_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
)

// TestThreadsGiveSameBits runs the fused training graph with 1, 2 and 3
// threads, every job split however small (minSplitWork = 0), on two
// batches, and requires the same loss, logits, gradients and attention
// weights to the bit: the promise of team that lets training give the
// same weights on any machine. Both dtypes, with and without the mask.
func TestThreadsGiveSameBits(t *testing.T) {
	defer fused.SplitEverything()()
	for _, dtype := range []string{"float32", "float64"} {
		for _, mask := range []bool{true, false} {
			spec := config.Model{Bias: true, Init: "torch", Vocab: 11, Context: 70, Embedding: 12, Blocks: 2, Heads: 3, FFMult: 3, QKV: true,
				Mask: mask, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: dtype}
			t.Run(fmt.Sprintf("%s_mask%v", dtype, mask), func(t *testing.T) {
				const batch = 3
				rng := rand.New(rand.NewPCG(3, 3))
				n := batch * spec.Context
				x, y := graphtest.RandomBatch(rng, spec.Vocab, 2*n)
				var want [][]float64
				for _, threads := range []int{1, 2, 3} {
					m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 7, Backend: graph.Backend{Threads: threads}})
					if err != nil {
						t.Fatal(err)
					}
					p, err := tape.Compile(m, true)
					if err != nil {
						t.Fatal(err)
					}
					var got [][]float64
					for b := 0; b < 2; b++ {
						if err := p.Run(x[b*n:(b+1)*n], y[b*n:(b+1)*n]); err != nil {
							t.Fatal(err)
						}
						got = append(got, []float64{p.Loss()}, graph.Float64s(p.Logits.Value()))
						for _, g := range p.Grads {
							got = append(got, graph.Float64s(g.Value()))
						}
						for _, a := range p.Attention {
							got = append(got, graph.Float64s(a.Value()))
						}
					}
					p.Close()
					if threads == 1 {
						want = got
					} else if !reflect.DeepEqual(got, want) {
						t.Errorf("%d threads computed other bits than 1 thread", threads)
					}
				}
			})
		}
	}
}
