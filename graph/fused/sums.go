package fused

import (
	"reflect"
	"strings"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// FuseSums makes every sum of two whole tensors of g that Gorgonia's own
// op computes — the residual sums of the model, and the gradient sums
// G.Grad inserts where a node feeds several consumers — a fused op, once
// g is complete (gradients included) and before its plan (PlanMemory) and
// its machine are made. Why: Gorgonia's ops may write in place, so the
// operands of its sums keep buffers of their own for the whole run (86
// (B·T, C) matrices per GPT-2 124M training graph, 129 MiB at 2 × 256
// tokens); read by a fused op, they are lent like any other intermediate.
// Each entry is the same one addition, so the bits do not change.
//
// G.Grad's sums exist only once it has run, as Gorgonia's nodes: FuseSums
// swaps their op in place (Node's op field, found by reflection, as
// tape.go reaches the TapeMachine's instructions). When that field is not
// the one of the Gorgonia v0.9.18 this was written against, it changes
// nothing.
func (f *Emitter) FuseSums(g *G.ExprGraph) {
	field, ok := reflect.TypeFor[G.Node]().FieldByName("op")
	if !ok || field.Type != reflect.TypeFor[G.Op]() {
		return
	}
	for _, n := range g.AllNodes() {
		if n.Op() == nil || !isPlainSum(g, n, f.dt) {
			continue
		}
		shape := n.Shape().Clone()
		op := f.newOp("Sum", f.dims, kernelOf(sumKernel[float32], sumKernel[float64]),
			rank(len(shape), len(shape)), shape)
		*(*G.Op)(unsafe.Add(unsafe.Pointer(n), field.Offset)) = op
	}
}

// isPlainSum says whether n is Gorgonia's a + b of two tensors of n's
// shape and dtype dt (no broadcast, no scalar).
func isPlainSum(g *G.ExprGraph, n *G.Node, dt tensor.Dtype) bool {
	if _, fused := n.Op().(*fusedOp); fused || !strings.HasPrefix(n.Op().String(), "+ ") {
		return false
	}
	if b, ok := n.Op().(interface{ IsBinary() bool }); !ok || !b.IsBinary() {
		return false
	}
	ins := inputsOf(g, n)
	if len(ins) != 2 || n.Shape().TotalSize() < 2 || n.Dtype() != dt {
		return false
	}
	for _, in := range ins {
		if !in.Shape().Eq(n.Shape()) || in.Dtype() != dt {
			return false
		}
	}
	return true
}

// sumKernel: out = in[0] + in[1], entry by entry.
func sumKernel[F gemm.Float](a *args[F]) {
	x, y := a.in[0], a.in[1]
	elements(a, len(a.out), len(a.out), func(lo, hi int) {
		out := a.out[lo:hi]
		for i := range out {
			out[i] = x[lo+i] + y[lo+i]
		}
	})
}
