package fused

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// What the external tests (package fused_test, which build and run whole
// graphs through packages graph and tape) need to see inside.

// SplitEverything makes every team split every job however small, and
// every graph use the threads it is given however small, until restore is
// called.
func SplitEverything() (restore func()) {
	savedWork, savedSize := minSplitWork, minParallelActivation
	minSplitWork, minParallelActivation = 0, 0
	return func() { minSplitWork, minParallelActivation = savedWork, savedSize }
}

// StopLending makes every fused op of g keep its own output buffer, and
// returns how many of them were lending theirs.
func StopLending(g *G.ExprGraph) (lent int) {
	for _, n := range g.AllNodes() {
		if op, ok := n.Op().(*fusedOp); ok {
			if op.uses > 0 {
				lent++
			}
			op.uses, op.readOf = 0, nil
		}
	}
	return lent
}

// BuffersMade is the number of buffers mem has made.
func BuffersMade(mem *Memory) int {
	made := 0
	for _, list := range mem.f32 {
		made += len(list)
	}
	for _, list := range mem.f64 {
		made += len(list)
	}
	return made
}

// OnTeamEngine reports whether t computes with a team's engine.
func OnTeamEngine(t *tensor.Dense) bool {
	_, ok := t.Engine().(*teamEngine)
	return ok
}

// FreeBuffers is the number of buffers of n entries m holds free.
func FreeBuffers(m *Memory, n int) int { return len(m.f32[n]) + len(m.f64[n]) }
