package fused_test

import (
	"math"
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
			compile := func(mem *fused.Memory) *tape.Program { return compileTraining(t, spec, batch, mem) }
			mem := fused.NewMemory()
			lending, owning := compile(mem), compile(fused.NewMemory())
			fused.StopLending(owning.G)
			run := func(p *tape.Program, x, y []int) [][]float64 { return lossAndGrads(t, p, x, y) }
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

// TestGradientsLentUntilReleased: a training graph's gradients are loans
// (fused.LendGradients, tape.CompileLoss) readable after a run until
// ReleaseGrads, with the bits of the same graph keeping every buffer, over
// runs A, B, A with tied and untied embeddings in float32 and float64;
// given back (filled with NaN, FillGivenBack) every gradient reads NaN, so
// each was lent; the next runs borrow them again and make no memory; and
// the gradients take room the activations gave back: the Memory is smaller
// than one that lends the activations alone plus the gradients' entries.
func TestGradientsLentUntilReleased(t *testing.T) {
	defer fused.FillGivenBack()()
	defer fused.ChunkBytes(4096)() // a chunk of 64 activations would hold everything
	for _, dtype := range []string{"float32", "float64"} {
		for _, tied := range []bool{false, true} {
			spec := config.Model{Bias: true, Init: "torch", Vocab: 9, Context: 16, Embedding: 16, Blocks: 2, Heads: 2, FFMult: 4,
				QKV: true, Mask: true, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: dtype,
				FinalNorm: true, TieEmbeddings: tied}
			const batch = 3
			n := batch * spec.Context
			rng := rand.New(rand.NewPCG(5, 6))
			xa, ya := graphtest.RandomBatch(rng, spec.Vocab, n)
			xb, yb := graphtest.RandomBatch(rng, spec.Vocab, n)
			compile := func(mem *fused.Memory) *tape.Program { return compileTraining(t, spec, batch, mem) }
			mem, actsMem := fused.NewMemory(), fused.NewMemory()
			lending, owning, actsOnly := compile(mem), compile(fused.NewMemory()), compile(actsMem)
			fused.StopLending(owning.G)
			if fused.KeepGradients(actsOnly.G) != len(actsOnly.Grads) {
				t.Fatalf("%s, tied %v: not every gradient is lent", dtype, tied)
			}
			run := func(p *tape.Program, x, y []int) [][]float64 { return lossAndGrads(t, p, x, y) }
			made := 0
			for i, b := range [][2][]int{{xa, ya}, {xb, yb}, {xa, ya}} {
				want := run(owning, b[0], b[1])
				if got := run(lending, b[0], b[1]); !graphtest.SameBits(got, want) {
					t.Errorf("%s, tied %v, run %d: the graph lending its gradients computed other bits", dtype, tied, i)
				}
				run(actsOnly, b[0], b[1])
				if i == 0 {
					made = fused.MemoryEntries(mem)
				} else if got := fused.MemoryEntries(mem); got != made {
					t.Errorf("%s, tied %v, run %d: %d entries in the Memory, %d after the first run", dtype, tied, i, got, made)
				}
				lending.ReleaseGrads()
				for k, g := range lending.Grads {
					for j, v := range graph.Float64s(g.Value()) {
						if !math.IsNaN(v) {
							t.Fatalf("%s, tied %v, run %d: ∂%s[%d] = %v after ReleaseGrads: not given back", dtype, tied, i, lending.Params[k].Name, j, v)
						}
					}
				}
			}
			grads := 0
			for _, g := range lending.Grads {
				grads += g.Shape().TotalSize()
			}
			acts := fused.MemoryEntries(actsMem)
			if got := fused.MemoryEntries(mem); !(got < acts+grads) {
				t.Errorf("%s, tied %v: %d entries with the gradients lent, %d for the activations alone and %d of gradients", dtype, tied, got, acts, grads)
			}
			t.Logf("%s, tied %v: %d entries with the gradients lent, %d for the activations alone and %d of gradients", dtype, tied, fused.MemoryEntries(mem), acts, grads)
		}
	}
}

// compileTraining compiles spec's training graph at batch on mem, as a
// training shard is (tape.CompileLoss: the loss and the gradients read
// after a run).
func compileTraining(t *testing.T, spec config.Model, batch int, mem *fused.Memory) *tape.Program {
	t.Helper()
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

// lossAndGrads runs p on a batch and returns its loss and every gradient.
func lossAndGrads(t *testing.T, p *tape.Program, x, y []int) [][]float64 {
	t.Helper()
	if err := p.Run(x, y); err != nil {
		t.Fatal(err)
	}
	out := [][]float64{{p.Loss()}}
	for _, g := range p.Grads {
		out = append(out, graph.Float64s(g.Value()))
	}
	return out
}
