package fused

import (
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// Memory lends the intermediate buffers of fused graphs, so that a
// training step needs memory for what is alive at once rather than for
// every intermediate of the forward and the backward pass (at nanoGPT's
// shakespeare-char shape that is the difference between PyTorch's peak
// and twice it).
//
// A fused op's output is lent when every reader of it is a fused op and
// nobody reads it after the run (it is not a gradient, the logits, the
// loss, or the attention weights of a forward-only program): the op takes
// a buffer when it runs, and its last reader gives the buffer back once its
// kernel is done. Readers count per run, so the order the tape runs the
// ops in does not matter. Outputs read by Gorgonia's own ops keep a buffer
// of their own: those ops may work in place, and what they write would
// outlive the loan.
//
// An op whose kernel may write over its first input (the cross-entropy's
// backward: the logits' gradient over the logits) takes that input's loan
// over when it is the input's last reader left in the run (takeLoan): one
// buffer for both.
//
// A training graph's gradients are loans too, held past the run until the
// step that reads them gives them back (LendGradients).
//
// The buffers are ranges of a few chunks that buffers of every size share
// (arena.go), so a buffer given back serves a later request of another
// size: a gradient takes the room of the activations freed before it.
//
// Graphs that never run at the same time — the training graph and its
// evaluation graph — can share one Memory (graph.Options.Memory).
type Memory struct {
	f32 arena[float32]
	f64 arena[float64]
	// kept holds the buffers that sharedBuffer hands out.
	kept map[keptKey]any
}

type keptKey struct {
	name  string
	n     int
	bytes uintptr // 4 or 8: float32 or float64
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{kept: map[keptKey]any{}}
}

// sharedBuffer returns the one buffer of n entries that m keeps under name
// for every graph it serves. A kernel may use it for what it computes and
// reads within one run — written first, never read after the run — as
// no two of those graphs run at the same time. One op per graph may use a
// name (OutputLoss's logits).
func sharedBuffer[F gemm.Float](m *Memory, name string, n int) []F {
	key := keptKey{name, n, unsafe.Sizeof(F(0))}
	if b, ok := m.kept[key].([]F); ok {
		return b
	}
	b := make([]F, n)
	m.kept[key] = b
	return b
}

// lend returns a buffer of n elements for op's output, a range of m's
// chunks (arena).
func (m *Memory) lend(dt tensor.Dtype, n int) any {
	if dt == tensor.Float64 {
		return m.f64.lend(n)
	}
	return m.f32.lend(n)
}

// giveBack returns a lent buffer.
func (m *Memory) giveBack(buf any) {
	switch b := buf.(type) {
	case []float32:
		m.f32.giveBack(b)
	case []float64:
		m.f64.giveBack(b)
	}
}

// PlanMemory decides, once the graph is complete (gradients included),
// which fused outputs are lent (see Memory) and tells every fused op which
// of its inputs it is a reader of. keep lists the nodes read after a run.
// A graph whose plan is never made lends nothing.
func PlanMemory(g *G.ExprGraph, keep []*G.Node) {
	kept := map[*G.Node]bool{}
	for _, n := range keep {
		kept[n] = true
	}
	lent := map[*G.Node]*fusedOp{}
	for _, n := range g.AllNodes() {
		op, ok := n.Op().(*fusedOp)
		if !ok || op.mem == nil || len(op.shape) == 0 || kept[n] || op.inPlace {
			continue
		}
		uses := 0
		readers := g.To(n.ID())
		for readers.Next() {
			reader := readers.Node().(*G.Node)
			rop, fused := reader.Op().(*fusedOp)
			ins := inputsOf(g, reader)
			if !fused || rop.inPlace && ins[0] == n {
				// Gorgonia's op, or an op that adds into n's buffer and
				// returns it: the buffer outlives the run.
				uses = 0
				break
			}
			for _, in := range ins {
				if in == n {
					uses++
				}
			}
		}
		if uses > 0 {
			op.uses = uses
			lent[n] = op
		}
	}
	for _, n := range g.AllNodes() {
		op, ok := n.Op().(*fusedOp)
		if !ok {
			continue
		}
		op.readOf = op.readOf[:0]
		for _, in := range inputsOf(g, n) {
			op.readOf = append(op.readOf, lent[in]) // nil: not lent
		}
	}
}

// inputsOf lists n's inputs in the order its op takes them.
func inputsOf(g *G.ExprGraph, n *G.Node) []*G.Node {
	var ins []*G.Node
	it := g.From(n.ID())
	for it.Next() {
		ins = append(ins, it.Node().(*G.Node))
	}
	return ins
}

// borrow gives op a lent buffer for this run's output.
func (op *fusedOp) borrow() {
	op.lentBuf = op.mem.lend(op.dt, op.shape.TotalSize())
	// A graph's runs borrow the same ranges once the Memory has its chunks
	// (arena): the last run's tensor then has this backing already.
	if !sameBacking(op.out, op.lentBuf, op.shape) {
		op.out = tensor.New(tensor.WithShape(op.shape...), tensor.WithBacking(op.lentBuf))
	}
	op.pending = op.uses
}

// sameBacking reports whether v is a tensor of shape over the entries of
// buf, the same slice.
func sameBacking(v G.Value, buf any, shape tensor.Shape) bool {
	d, ok := v.(*tensor.Dense)
	return ok && d.Shape().Eq(shape) && HoldsEntries(d, buf)
}

// HoldsEntries reports whether v is a dense tensor whose entries are buf
// (a []float32 or []float64), the same slice: a lent buffer that comes
// back as the same range need not be wrapped again.
func HoldsEntries(v G.Value, buf any) bool {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return false
	}
	switch b := buf.(type) {
	case []float32:
		f, ok := floatsOf[float32](d)
		return ok && len(f) == len(b) && unsafe.SliceData(f) == unsafe.SliceData(b)
	case []float64:
		f, ok := floatsOf[float64](d)
		return ok && len(f) == len(b) && unsafe.SliceData(f) == unsafe.SliceData(b)
	}
	return false
}

// doneReading tells the producers of op's lent inputs that op has read them;
// the last reader gives the buffer back.
func (op *fusedOp) doneReading() {
	for i, src := range op.readOf {
		if src == nil || i == 0 && op.tookLoan {
			continue
		}
		if src.pending--; src.pending == 0 {
			src.mem.giveBack(src.lentBuf)
			src.lentBuf = nil
		}
	}
	op.tookLoan = false
}

// takeLoan makes op's output the buffer of its first input, vals[0], and
// reports whether it did: when op may write over that input
// (mayTakeLoan), its own output is lent, and the input is lent too with
// op its last reader left in this run. The buffer is then op's loan,
// given back after op's own last reader, and one buffer serves both (the
// logits and their gradient). Otherwise op borrows as any lent op.
func (op *fusedOp) takeLoan(vals []G.Value) bool {
	if !op.mayTakeLoan || op.uses == 0 || len(op.readOf) == 0 {
		return false
	}
	src := op.readOf[0]
	if src == nil || src.pending != 1 || src.lentBuf == nil || src.shape.TotalSize() != op.shape.TotalSize() {
		return false
	}
	op.out, op.lentBuf, op.pending, op.tookLoan = vals[0], src.lentBuf, op.uses, true
	src.lentBuf, src.pending = nil, 0
	return true
}

// Loans are the gradient buffers of one graph lent past its runs
// (LendGradients), given back together.
type Loans struct{ ops []*fusedOp }

// LendGradients lends the buffers of the gradients grads (a training
// graph's, after PlanMemory, which keeps them) beyond the run: each is
// borrowed from the graph's Memory when the backward pass computes it and
// stays readable until GiveBack. A step that folds the gradients into its
// sums after each run gives them back then, so at the start of the next
// backward pass, the activations' peak, no gradient holds memory, and a
// freed activation's range serves a gradient computed later. Without a
// GiveBack a gradient keeps its first buffer, as a kept output does.
// A gradient that is not a fused op's output, or that another kind of op
// reads, keeps its own buffer.
func LendGradients(g *G.ExprGraph, grads []*G.Node) *Loans {
	l := &Loans{}
	for _, n := range grads {
		if op := gradientProducer(g, n); op != nil && !op.held {
			op.held = true
			l.ops = append(l.ops, op)
		}
	}
	return l
}

// gradientProducer is the fused op whose buffer holds gradient n: n's own,
// or, when n's op adds into its first input and returns it (a tied
// embedding's gradient), that input's producer. nil when the buffer cannot
// be lent: not a fused output, not of a Memory, lent within the run
// already, or read by an op that is not fused.
func gradientProducer(g *G.ExprGraph, n *G.Node) *fusedOp {
	for {
		op, ok := n.Op().(*fusedOp)
		if !ok || op.mem == nil || len(op.shape) == 0 || op.uses > 0 {
			return nil
		}
		readers := g.To(n.ID())
		for readers.Next() {
			if _, fused := readers.Node().(*G.Node).Op().(*fusedOp); !fused {
				return nil
			}
		}
		if !op.inPlace {
			return op
		}
		n = inputsOf(g, n)[0]
	}
}

// GiveBack returns the gradients' buffers to their Memory: the gradients
// are not readable until the next run computes them again.
func (l *Loans) GiveBack() {
	if l == nil {
		return
	}
	for _, op := range l.ops {
		if op.lentBuf != nil {
			op.mem.giveBack(op.lentBuf)
			op.lentBuf = nil
		}
	}
}
