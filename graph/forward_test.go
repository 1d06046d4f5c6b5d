package graph_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
)

// TestForwardOnlyFusedMatchesUnfused covers the graphs that sampling and
// attention maps build: no loss, no gradients, batch 1, sometimes shorter
// than the context. Over random switch combinations, the fused and the
// unfused graph built from one seed give the same logits and attention
// weights (float64, 1e-12 relative), and each gives the same bits when run
// a second time on the same tokens after a run on other tokens.
func TestForwardOnlyFusedMatchesUnfused(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	for c := 0; c < 24; c++ {
		heads := []int{1, 2, 4}[rng.IntN(3)]
		spec := config.Model{Bias: true, Init: "torch",
			Vocab: 3 + rng.IntN(9), Context: 2 + rng.IntN(6), Embedding: 4 * heads, Blocks: rng.IntN(3),
			Heads: heads, FFMult: 1 + rng.IntN(3), QKV: rng.IntN(2) == 0, Mask: rng.IntN(2) == 0,
			OutProj: rng.IntN(2) == 0, Residual: rng.IntN(2) == 0,
			Norm: []string{"none", "pre", "post"}[rng.IntN(3)], Activation: []string{"gelu", "relu"}[rng.IntN(2)],
			Dtype: "float64",
		}
		seqLen := 1 + rng.IntN(spec.Context)
		tokens := func() []int {
			ids := make([]int, seqLen)
			for i := range ids {
				ids[i] = rng.IntN(spec.Vocab)
			}
			return ids
		}
		ids, other := tokens(), tokens()
		t.Run(fmt.Sprintf("%d_%+v_T%d", c, spec, seqLen), func(t *testing.T) {
			var got [2][][]float64
			for i, path := range graphtest.Paths {
				m, err := graph.Build(spec, graph.Options{Batch: 1, SeqLen: seqLen, Seed: int64(c), Backend: graph.Backend{Unfused: path.Unfused}})
				if err != nil {
					t.Fatal(err)
				}
				p, err := tape.Compile(m, false)
				if err != nil {
					t.Fatal(err)
				}
				run := func(x []int) [][]float64 {
					if err := p.Run(x, nil); err != nil {
						t.Fatal(err)
					}
					out := [][]float64{graph.Float64s(p.Logits.Value())}
					for _, a := range p.Attention {
						out = append(out, graph.Float64s(a.Value()))
					}
					return out
				}
				got[i] = run(ids)
				run(other)
				if again := run(ids); !reflect.DeepEqual(got[i], again) {
					t.Errorf("%s: a second run on the same tokens differs", path.Name)
				}
				p.Close()
			}
			for k := range got[1] {
				if e := golden.RelErr(got[0][k], got[1][k], 0); !(e <= 1e-12) {
					t.Errorf("output %d (0 = logits, then attention per block): fused vs unfused relative error %.3g", k, e)
				}
			}
		})
	}
}
