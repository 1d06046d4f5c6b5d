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
			op.uses, op.readOf, op.held = 0, nil, false
		}
	}
	return lent
}

// LentEntries is the number of entries of g's fused outputs that are lent
// within a run.
func LentEntries(g *G.ExprGraph) int {
	n := 0
	for _, node := range g.AllNodes() {
		if op, ok := node.Op().(*fusedOp); ok && op.uses > 0 {
			n += op.shape.TotalSize()
		}
	}
	return n
}

// MemoryEntries is the number of entries of the chunks mem has made.
func MemoryEntries(mem *Memory) int { return mem.f32.capacity() + mem.f64.capacity() }

// OnTeamEngine reports whether t computes with a team's engine.
func OnTeamEngine(t *tensor.Dense) bool {
	_, ok := t.Engine().(*teamEngine)
	return ok
}

// LoansMade is the number of buffers of n entries m has lent.
func LoansMade(m *Memory, n int) int { return m.f32.made[n] + m.f64.made[n] }

// KeepGradients makes g's gradients keep their buffers (not lent past the
// run, LendGradients) and returns how many were lent.
func KeepGradients(g *G.ExprGraph) (lent int) {
	for _, n := range g.AllNodes() {
		if op, ok := n.Op().(*fusedOp); ok && op.held {
			op.held = false
			lent++
		}
	}
	return lent
}

// ChunkBytes makes every Memory's new chunks at most bytes long (at least
// the request), until restore is called: a small graph then fills its
// chunks, as a large one does.
func ChunkBytes(bytes int) (restore func()) {
	saved := chunkBytes
	chunkBytes = bytes
	return func() { chunkBytes = saved }
}
