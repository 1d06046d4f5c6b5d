package fused_test

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
)

// TestFusedProgramUsesTeamEngine checks that a fused program's values
// carry the team's engine, so that Gorgonia's sums in it (the residual,
// the gradient sums) reach teamEngine.Add; the unfused program keeps
// Gorgonia's engine.
func TestFusedProgramUsesTeamEngine(t *testing.T) {
	spec := config.Model{Bias: true, Init: "torch", Vocab: 11, Context: 8, Embedding: 12, Blocks: 1, Heads: 3, FFMult: 2, QKV: true,
		Mask: true, OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", Dtype: "float32"}
	for _, unfused := range []bool{false, true} {
		m, err := graph.Build(spec, graph.Options{Batch: 2, Loss: true, Seed: 1, Backend: graph.Backend{Unfused: unfused, Threads: 2}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := tape.Compile(m, true)
		if err != nil {
			t.Fatal(err)
		}
		x, y := graphtest.RandomBatch(rand.New(rand.NewPCG(1, 1)), spec.Vocab, 2*spec.Context)
		if err := p.Run(x, y); err != nil {
			t.Fatal(err)
		}
		onTeam := fused.OnTeamEngine(p.Logits.Value().(*tensor.Dense))
		if onTeam == unfused {
			t.Errorf("unfused %v: logits on the team's engine: %v", unfused, onTeam)
		}
		p.Close()
	}
}
