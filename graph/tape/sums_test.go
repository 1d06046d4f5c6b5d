package tape

import (
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
)

// TestFusedSumsChangeNothing: a training graph whose sums are fused ops
// (fused.FuseSums, the residual sums and G.Grad's, whose operands are then
// lent) computes the bits of the same graph with Gorgonia's sums — loss,
// logits and every gradient, over two batches (the second on reused
// buffers) — with tied embeddings and without, in float32 and float64.
func TestFusedSumsChangeNothing(t *testing.T) {
	defer func() { fuseSums = true }()
	for _, dtype := range []string{"float32", "float64"} {
		for _, tied := range []bool{false, true} {
			spec := config.Model{Bias: !tied, Init: "torch", Vocab: 13, Context: 8, Embedding: 16, Blocks: 2, Heads: 2, FFMult: 2,
				QKV: true, Mask: true, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: dtype,
				FinalNorm: true, TieEmbeddings: tied}
			const batch = 3
			rng := rand.New(rand.NewPCG(3, 4))
			var batches [2][2][]int
			for i := range batches {
				batches[i][0], batches[i][1] = graphtest.RandomBatch(rng, spec.Vocab, batch*spec.Context)
			}
			run := func(fuse bool) ([][]float64, int) {
				fuseSums = fuse
				m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 5})
				if err != nil {
					t.Fatal(err)
				}
				p, err := Compile(m, true)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				sums := 0
				for _, n := range m.G.AllNodes() {
					if n.Op() != nil && n.Op().String() == "Sum" {
						sums++
					}
				}
				var out [][]float64
				for _, b := range batches {
					if err := p.Run(b[0], b[1]); err != nil {
						t.Fatal(err)
					}
					out = append(out, []float64{p.Loss()}, graph.Float64s(p.Logits.Value()))
					for _, g := range p.Grads {
						out = append(out, graph.Float64s(g.Value()))
					}
				}
				return out, sums
			}
			want, none := run(false)
			got, sums := run(true)
			if none != 0 || sums == 0 {
				t.Fatalf("%s, tied %v: %d fused sums, %d without FuseSums", dtype, tied, sums, none)
			}
			if !graphtest.SameBits(got, want) {
				t.Errorf("%s, tied %v: the fused sums computed other bits", dtype, tied)
			}
		}
	}
}
