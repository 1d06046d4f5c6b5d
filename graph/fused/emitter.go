// Package fused emits the model's layers as fused ops: one Gorgonia node
// per layer, running a hand-written kernel, with hand-written backward
// kernels that its SymDiff emits, llm.c style. It is what a graph compiler
// would emit for the layers package graph specifies: no transposes, no
// broadcast copies, no reshapes, and no allocation after the first run.
// The graph is still one static Gorgonia graph differentiated by
// gorgonia.Grad.
//
// Imports run one way: package graph (the model's specification) creates
// an Emitter and calls it layer by layer; package tape (which runs a
// compiled graph) asks it for its team and plans its memory. This package
// knows neither of them: it sees only Gorgonia nodes, and below it the
// kernels of graph/internal (gemm, expf, gelu, layernorm, pool).
//
// Files: one per layer (embedding.go, linear.go, attention.go with
// dropout, layernorm.go, activation.go, crossentropy.go, cached.go for the
// one-position graph of a key/value cache), the op every layer's node
// runs (op.go), the goroutines its kernels split work over (team.go,
// engine.go) and the buffers they borrow (memory.go).
package fused

import (
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// Emitter is the fused emitter of one graph (it implements graph.Emitter):
// one node per layer, one kernel per node, the kernels beside their
// layer's method. Its ops share the team that runs their kernels and the
// Memory that lends their buffers.
type Emitter struct {
	dt   tensor.Dtype
	team *team    // shared by all ops of one graph, which run one at a time
	mem  *Memory  // lends the ops' intermediate buffers (memory.go)
	dims opParams // the sizes every op of this graph shares

	// tied is the graph's TiedEmbedding's state (tied.go), nil without one.
	tied *tiedState

	// Split's job, and the team's view of it made once (see Split).
	splitJob  func(lo, hi int)
	splitPart func(ws *gemm.Workspace, lo, hi int)
}

// Sizes are the sizes every op of one graph shares.
type Sizes struct {
	Batch   int // B, sequences per run
	Seq     int // T, positions per sequence
	Width   int // C, the embedding width
	Heads   int // H
	Vocab   int // V
	Context int // rows of the position table
}

// New returns the emitter of one graph of dtype dt (Float32 or Float64).
// threads bounds the goroutines its kernels use (0 or 1: the calling
// goroutine only; a small graph uses one whatever it says); mem lends
// their intermediate buffers, nil for a Memory of its own.
func New(dt tensor.Dtype, s Sizes, threads int, mem *Memory) *Emitter {
	if mem == nil {
		mem = NewMemory()
	}
	return newEmitter(dt, newTeam(threadsFor(threads, s.Batch*s.Seq*s.Width, s.Width)), mem, s)
}

// BF16 makes the graph's float32 products mixed precision: operands
// rounded to bfloat16 (round to nearest even), sums in float32 (see
// gemm.Workspace.BF16). It applies to every emitter sharing f's team
// (Sized), and is set before the graph first runs.
func (f *Emitter) BF16() { f.team.bf16() }

// BF16Kernel names the kernel that bfloat16 products run on this CPU:
// "amx" (AMX tiles), "avx512bf16" (VDPBF16PS; with the reason in
// parentheses where the CPU has AMX but the OS refused it), or "go" where
// it lacks AVX512_BF16 (the plain-Go twin: the same bits, two orders of
// magnitude slower than the float32 products).
func BF16Kernel() string { return gemm.BF16Kernel() }

// BF16PeakRatio measures, on this core, the bfloat16 kernel's peak over
// float32's (0 where bfloat16 runs the plain-Go twin): at or below 1
// bfloat16 products are slower than float32 ones here. About 0.2 s.
func BF16PeakRatio() float64 { return gemm.BF16PeakRatio() }

// Sized returns an emitter of the same graph for rows of other sizes (an
// encoder's beside a decoder's): it shares f's team and Memory.
func (f *Emitter) Sized(s Sizes) *Emitter { return newEmitter(f.dt, f.team, f.mem, s) }

func newEmitter(dt tensor.Dtype, t *team, mem *Memory, s Sizes) *Emitter {
	f := &Emitter{dt: dt, team: t, mem: mem, dims: opParams{
		Rows: s.Batch * s.Seq, Batch: s.Batch, Seq: s.Seq, Width: s.Width,
		Heads: s.Heads, Vocab: s.Vocab, Context: s.Context,
	}}
	f.splitPart = func(_ *gemm.Workspace, lo, hi int) { f.splitJob(lo, hi) }
	return f
}

// Split calls job on contiguous ranges [lo, hi) that cover [0, n), on the
// goroutines that run the graph's kernels, and waits for all of them.
// work estimates the whole job (about one multiply-add per unit), so that
// small jobs run in the calling goroutine alone. job must compute each
// item independently of the range it lands in, and must not call Split or
// run the graph.
func (f *Emitter) Split(n, work int, job func(lo, hi int)) {
	f.splitJob = job
	f.team.split(n, work, f.splitPart)
	f.splitJob = nil
}

// Engine is the tensor engine a program of this graph runs Gorgonia's own
// ops with (G.WithEngine), so that their sums run on the team too (see
// teamEngine).
func (f *Emitter) Engine() tensor.Engine { return newTeamEngine(f.team) }

// newOp makes a forward op; wrt says which inputs it is differentiable
// with respect to (the caller sets its grad).
func (f *Emitter) newOp(kind string, p opParams, k kernel, ins []argKind, shape tensor.Shape, wrt ...bool) *fusedOp {
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
