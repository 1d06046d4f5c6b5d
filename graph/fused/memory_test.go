package fused_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
)

// TestLentBuffersChangeNothing trains two copies of one fused graph — one
// lending its intermediate buffers (the default), one keeping a buffer per
// op — on batches A, B, A, and requires the same loss, logits and
// gradients to the bit. It also requires that lending happens and saves
// memory: fewer buffers are made than ops lend them, with a training and
// an evaluation graph sharing one Memory as training does.
func TestLentBuffersChangeNothing(t *testing.T) {
	for _, dtype := range []string{"float32", "float64"} {
		spec := config.Model{Bias: true, Init: "torch", Vocab: 9, Context: 8, Embedding: 8, Blocks: 3, Heads: 2, FFMult: 2,
			QKV: true, Mask: true, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: dtype}
		const batch = 3
		n := batch * spec.Context
		rng := rand.New(rand.NewPCG(1, 2))
		xa, ya := graphtest.RandomBatch(rng, spec.Vocab, n)
		xb, yb := graphtest.RandomBatch(rng, spec.Vocab, n)
		mem := fused.NewMemory()
		compile := func(withGrads bool) *tape.Program {
			m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 3, Memory: mem})
			if err != nil {
				t.Fatal(err)
			}
			p, err := tape.Compile(m, withGrads)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		lending, eval := compile(true), compile(false)
		owning := compile(true)
		entries := fused.LentEntries(owning.G)
		lent := fused.StopLending(owning.G)
		if lent == 0 {
			t.Fatalf("%s: no buffer is lent", dtype)
		}
		run := func(p *tape.Program, x, y []int) [][]float64 {
			if err := p.Run(x, y); err != nil {
				t.Fatal(err)
			}
			out := [][]float64{{p.Loss()}, graph.Float64s(p.Logits.Value())}
			for _, g := range p.Grads {
				out = append(out, graph.Float64s(g.Value()))
			}
			return out
		}
		for i, b := range [][2][]int{{xa, ya}, {xb, yb}, {xa, ya}} {
			want := run(owning, b[0], b[1])
			if got := run(lending, b[0], b[1]); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, run %d: lent buffers change the results", dtype, i)
			}
			if err := eval.Run(b[0], b[1]); err != nil {
				t.Fatal(err)
			}
			// The evaluation graph lends the attention weights and keeps
			// them in scratch (attentionForward): the same loss.
			if got := eval.Loss(); got != want[0][0] {
				t.Errorf("%s, run %d: evaluation loss %v, training graph's %v", dtype, i, got, want[0][0])
			}
		}
		made := fused.MemoryEntries(mem)
		if !(made < entries) {
			t.Errorf("%s: %d entries made for %d entries of lent outputs of one graph (and as many of its evaluation graph)", dtype, made, entries)
		}
		t.Logf("%s: %d outputs of %d entries lent per training graph, %d entries made for both graphs", dtype, lent, entries, made)
	}
}

// TestLogitsGradientTakesTheLogitsBuffer: in a training graph whose logits
// are lent (tape.CompileLoss), the cross-entropy's backward writes their
// gradient over them, so the Memory holds one (rows, V) buffer where it
// held two, and the loss and every gradient keep their bits (against the
// same graph keeping every buffer), over three runs, with and without
// tied embeddings, in float32 and float64.
func TestLogitsGradientTakesTheLogitsBuffer(t *testing.T) {
	for _, dtype := range []string{"float32", "float64"} {
		for _, tied := range []bool{false, true} {
			spec := config.Model{Bias: true, Init: "torch", Vocab: 9, Context: 8, Embedding: 8, Blocks: 2, Heads: 2, FFMult: 2,
				QKV: true, Mask: true, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: dtype,
				FinalNorm: true, TieEmbeddings: tied}
			const batch = 3
			n := batch * spec.Context
			rng := rand.New(rand.NewPCG(1, 2))
			xa, ya := graphtest.RandomBatch(rng, spec.Vocab, n)
			xb, yb := graphtest.RandomBatch(rng, spec.Vocab, n)
			compile := func(mem *fused.Memory) *tape.Program {
				m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 3, Memory: mem})
				if err != nil {
					t.Fatal(err)
				}
				p, err := tape.CompileLoss(m, true)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			mem := fused.NewMemory()
			lending, owning := compile(mem), compile(fused.NewMemory())
			fused.StopLending(owning.G)
			run := func(p *tape.Program, x, y []int) [][]float64 {
				if err := p.Run(x, y); err != nil {
					t.Fatal(err)
				}
				out := [][]float64{{p.Loss()}}
				for _, g := range p.Grads {
					out = append(out, graph.Float64s(g.Value()))
				}
				return out
			}
			for i, b := range [][2][]int{{xa, ya}, {xb, yb}, {xa, ya}} {
				want := run(owning, b[0], b[1])
				if got := run(lending, b[0], b[1]); !graphtest.SameBits(got, want) {
					t.Errorf("%s, tied %v, run %d: the lending graph computed other bits", dtype, tied, i)
				}
				if k := fused.LoansMade(mem, n*spec.Vocab); k != i+1 {
					t.Errorf("%s, tied %v, run %d: %d buffers of the logits' size lent in %d runs, want one a run", dtype, tied, i, k, i+1)
				}
			}
		}
	}
}
