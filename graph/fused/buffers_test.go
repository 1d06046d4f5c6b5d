package fused_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
)

// TestFusedBuffersAcrossRuns trains the fused graph on batches A, B, A:
// the second A must give bit for bit the first A's loss and gradients, and
// B those of a fresh graph, so no kernel reads a buffer its op left from an
// earlier run. Every switch that changes the fused graph is on.
func TestFusedBuffersAcrossRuns(t *testing.T) {
	spec := graphtest.SmallSpec("post")
	const batch = 3
	n := batch * spec.Context
	rng := rand.New(rand.NewPCG(9, 9))
	xa, ya := graphtest.RandomBatch(rng, spec.Vocab, n)
	xb, yb := graphtest.RandomBatch(rng, spec.Vocab, n)
	newProgram := func() *tape.Program {
		m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		p, err := tape.Compile(m, true)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	result := func(p *tape.Program, x, y []int) [][]float64 {
		if err := p.Run(x, y); err != nil {
			t.Fatal(err)
		}
		return graphtest.Outputs(p.Loss(), p.Logits, p.Grads, p.Attention)
	}
	p := newProgram()
	defer p.Close()
	first := result(p, xa, ya)
	gotB := result(p, xb, yb)
	again := result(p, xa, ya)
	fresh := newProgram()
	defer fresh.Close()
	wantB := result(fresh, xb, yb)
	if !reflect.DeepEqual(first, again) {
		t.Error("batch A after batch B differs from batch A first")
	}
	if !reflect.DeepEqual(gotB, wantB) {
		t.Error("batch B after batch A differs from batch B on a fresh graph")
	}
	if math.IsNaN(first[0][0]) {
		t.Error("loss is NaN")
	}
}
