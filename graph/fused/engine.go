package fused

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// teamEngine is the tensor engine a fused program's TapeMachine computes
// Gorgonia's own ops with (G.WithEngine): Gorgonia's, except that the sum
// of two whole float matrices runs on the graph's team. Those sums are the
// elementwise work left outside the fused kernels: the residual h + x of
// graph/model.go, and the gradient sums G.Grad inserts where a node feeds
// several consumers (a block's input feeds its layer norm and the
// residual; the normalised rows feed q, k and v). At nanoGPT's CPU shape
// that is 24 sums of a (B·T, C) matrix per step, which on one goroutine
// were the largest serial part of a two-thread step. A window program
// that package tape compiles has those sums as fused ops instead
// (FuseSums); the cached and translation graphs keep Gorgonia's.
//
// The machine sets its engine on every value an op returns, fused outputs
// included, so tensor.Add finds this one through its first operand. Each
// entry is one addition, so the bits do not depend on the split. Anything
// but a plain sum of two contiguous tensors of one shape (scalars,
// broadcasts, views, WithIncr, a new result) goes to Gorgonia's engine.
type teamEngine struct {
	G.StandardEngine
	t *team

	// One call's options, parsed here: tensor.ParseFuncOpts takes its
	// OpOpt from a pool that only package tensor can give it back to.
	opts tensor.OpOpt
	// The sum under way, and the part function over it made once, so
	// that a sum allocates nothing.
	sum32 [3][]float32 // out, a, b
	sum64 [3][]float64
	add32 func(ws *gemm.Workspace, lo, hi int)
	add64 func(ws *gemm.Workspace, lo, hi int)
}

func newTeamEngine(t *team) *teamEngine {
	e := &teamEngine{t: t}
	e.add32 = func(_ *gemm.Workspace, lo, hi int) { addRange(e.sum32, lo, hi) }
	e.add64 = func(_ *gemm.Workspace, lo, hi int) { addRange(e.sum64, lo, hi) }
	return e
}

// Add is tensor.Adder's Add: a + b, into a with UseUnsafe, into the reuse
// tensor with WithReuse.
func (e *teamEngine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	if out := e.addOnTeam(a, b, opts); out != nil {
		return out, nil
	}
	return e.StandardEngine.Add(a, b, opts...)
}

// addOnTeam computes a + b on the team and returns the result, or returns
// nil when the call is not one it handles.
func (e *teamEngine) addOnTeam(a, b tensor.Tensor, opts []tensor.FuncOpt) tensor.Tensor {
	da, okA := a.(*tensor.Dense)
	db, okB := b.(*tensor.Dense)
	if !okA || !okB || !plain(da) || !plain(db) || !da.Shape().Eq(db.Shape()) || da.Dtype() != db.Dtype() {
		return nil
	}
	e.opts = tensor.OpOpt{}
	for _, opt := range opts {
		opt(&e.opts)
	}
	var out *tensor.Dense
	switch reuse := e.opts.Reuse(); {
	case e.opts.Incr() != nil:
		return nil
	case reuse != nil:
		dr, ok := reuse.(*tensor.Dense)
		if !ok || !plain(dr) || !dr.Shape().Eq(da.Shape()) || dr.Dtype() != da.Dtype() {
			return nil
		}
		out = dr
	case !e.opts.Safe():
		out = da
	default:
		return nil // a new tensor: rare, and Gorgonia's engine allocates it
	}
	// Float32s and Float64s (of the storage header) read the backing
	// array without Data's reflection and allocations.
	n := da.Shape().TotalSize()
	switch da.Dtype() {
	case tensor.Float32:
		e.sum32 = [3][]float32{out.Float32s(), da.Float32s(), db.Float32s()}
		e.t.split(n, n, e.add32)
		e.sum32 = [3][]float32{}
	case tensor.Float64:
		e.sum64 = [3][]float64{out.Float64s(), da.Float64s(), db.Float64s()}
		e.t.split(n, n, e.add64)
		e.sum64 = [3][]float64{}
	default:
		return nil
	}
	return out
}

// plain reports whether t's entries are its whole backing array in order:
// no view, transposition or mask, more than one entry.
func plain(t *tensor.Dense) bool {
	return t.Shape().TotalSize() > 1 && !t.RequiresIterator() && !t.IsMaterializable() &&
		t.IsNativelyAccessible() && t.DataSize() == t.Shape().TotalSize()
}

// addRange sets out[i] = a[i] + b[i] for lo ≤ i < hi, s = {out, a, b}.
func addRange[F gemm.Float](s [3][]F, lo, hi int) {
	out, a, b := s[0][lo:hi], s[1][lo:hi], s[2][lo:hi]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}
