package graph

import (
	"gorgonia.org/tensor"
)

// The fused path: what a graph compiler would emit for the layers of
// model.go. Each layer is one node (a fusedOp running one kernel of
// kernels.go) instead of a dozen primitive ones, and its backward is a
// few more, emitted by its SymDiff: no transposes, no broadcast copies, no
// reshapes, and no allocation after the first run. The graph is still one
// static Gorgonia graph differentiated by gorgonia.Grad; Options.Unfused
// emits the composition from primitives instead, and the tests check both
// against the reference and each fused layer against its composition.
//
// Parameters are created by the shared code in model.go and ops.go before
// either path is chosen, so both paths draw the same initial values.

// fused is the emitter of the fused ops (emitter.go): one node per layer,
// one kernel per node, the kernels beside their layer's emitter method in
// embedding.go, linear.go, attention.go, layernorm.go, activation.go and
// crossentropy.go.
type fused struct {
	dt   tensor.Dtype
	team *team    // shared by all ops of one graph, which run one at a time
	mem  *Memory  // lends the ops' intermediate buffers (memory.go)
	dims opParams // the sizes every op of this graph shares
}

// newOp makes a forward op; wrt says which inputs it is differentiable
// with respect to (the caller sets its grad).
func (f *fused) newOp(kind string, p opParams, k kernel, ins []argKind, shape tensor.Shape, wrt ...bool) *fusedOp {
	return &fusedOp{kind: kind, p: p, ins: ins, shape: shape, dt: f.dt, team: f.team, mem: f.mem, run: k, wrt: wrt}
}

// rank lists the dimensions of float inputs as their kinds.
func rank(dims ...int) []argKind {
	k := make([]argKind, len(dims))
	for i, d := range dims {
		k[i] = argKind(d)
	}
	return k
}
