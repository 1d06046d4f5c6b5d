package fused

import (
	"fmt"
	"hash"
	"hash/fnv"
	"unsafe"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// fusedOp is the Gorgonia face of one fused kernel: a node of
// the graph that runs one plain loop nest instead of a chain of primitive
// nodes. Forward ops know their backward: SymDiff emits one node per input
// gradient, each another fusedOp, so gorgonia.Grad and the TapeMachine
// treat the fused graph like any other.
//
// Every op keeps its output tensor and returns the same one on every run,
// so a training step allocates no activations or gradients once the first
// run has made them. This is safe because of how the TapeMachine treats
// values (vm_tape.go, compile.go, regalloc.go of v0.9.18):
//
//   - Reset only forgets the CPU registers (it returns nothing to a pool),
//     so a buffer kept here outlives it, and the op is asked for its value
//     again (Do) on every run before anything reads it.
//   - The op says ReturnsPtr() = false, OverwritesInput() = -1 and
//     CallsExtern() = false, so the register allocator gives its node a
//     register of its own and compiles no alloc instruction for it; and it
//     does not implement UsePreallocDoer, so execOp.exec always calls Do
//     and never hands it another value to write into.
//   - Each fusedOp belongs to one node of one graph (builders and SymDiff
//     make a new op per node), so two nodes never share a buffer.
//   - A later in-place op (a built-in Add of a residual, or the sum of
//     gradients Gorgonia adds for a node with several consumers) may write
//     into the buffer only after the register allocator has seen its last
//     reader, exactly as it may write into a freshly allocated one; the
//     buffer is rewritten in full by the next run's Do before it is read.
//
// What is not safe, and not done: returning a view of an input (the
// Reshape trap described at splitHeads), or writing into an input.
type fusedOp struct {
	kind  string       // what it computes, printed and hashed
	p     opParams     // the sizes and settings its kernel reads
	ins   []argKind    // the kind of each input
	shape tensor.Shape // of the output; empty for a scalar
	dt    tensor.Dtype
	team  *team // shared by all ops of one graph, which run one at a time
	run   kernel

	// wrt says which inputs the op is differentiable with respect to, and
	// grad emits their gradient nodes; both nil for backward ops.
	wrt  []bool
	grad func(op *fusedOp, in G.Nodes, out, dOut *G.Node) (G.Nodes, error)

	out G.Value // the cached output, made on the first run (or lent each run)

	// Lending (memory.go): mem lends the output when uses > 0, the number
	// of reads per run by other fused ops; pending counts the reads left in
	// this run; readOf[i] is the producer of input i when it is lent.
	mem *Memory
	// stats, when set, is what a forward kernel leaves for the backward
	// kernels of the same layer in the same run (layer norm: each row's
	// mean and 1/std); derive hands the pointer on.
	stats *[]float64
	// attn, for the attention ops of one layer, holds what their kernels
	// share: each worker's scratch and the ops whose outputs the backward
	// kernel writes ∂q and ∂k into (attention.go); derive hands it on.
	attn *attentionState
	// outLoss, for the ops of one OutputLoss, is what they share (outputloss.go).
	outLoss *outputLossState
	// tied, for a tied embedding's lookup and its gradient's sum, is what
	// they share (tied.go); the sum's op adds into its first input and
	// returns it (inPlace).
	tied    *tiedState
	inPlace bool
	// mayTakeLoan: the kernel may write its output over its first input
	// (each entry read before it is written), so when that input is lent
	// and this op is its last reader in a run, the op takes over its
	// buffer instead of borrowing another (takeLoan); tookLoan says it did
	// in the run under way.
	mayTakeLoan bool
	tookLoan    bool
	// held: the output is a gradient lent past the run (LendGradients):
	// borrowed when the op runs without a loan, given back by Loans.GiveBack.
	held       bool
	uses       int
	pending    int
	readOf     []*fusedOp
	lentBuf    any
	a32        args[float32]
	a64        args[float64]
	scalarIn32 []float32 // the values of scalar inputs, as slices for the kernel
	scalarIn64 []float64
}

// argKind describes an input: a float tensor of so many dimensions (0 for
// a scalar), or the integer token vector.
type argKind int

const intVector argKind = -1

// opParams are the sizes and settings of a fused kernel; each kernel reads
// the fields it needs.
type opParams struct {
	Rows    int     // rows of a (rows, width) activation: B·T
	In, Out int     // a linear layer's input and output widths
	Batch   int     // B
	Seq     int     // T, positions per sequence
	Width   int     // C, the embedding width
	Heads   int     // H
	Vocab   int     // V
	Context int     // rows of the position table
	Scale   float64 // attention: 1/√(C/H)
	Mask    bool    // attention: causal
	Eps     float64 // layer norm
	Ignore  int     // cross-entropy: the target id that counts for nothing
}

// args is what a kernel sees of one run: its float inputs (a scalar as a
// one-element slice), the token ids when it takes them, and its output.
type args[F gemm.Float] struct {
	in   [][]F
	ids  []int   // the first integer input
	ints [][]int // every integer input, in order (ints[0] is ids)
	out  []F
	ws   *gemm.Workspace // for products over whole matrices (team.whole)
	t    *team           // to split work: a.t.split(…)
	p    *opParams
	// scratch is the kernel's own float64 buffer, kept from run to run.
	scratch []float64
	// stats is the layer's statistics shared between its forward and
	// backward kernels (fusedOp.stats), or nil.
	stats *[]float64
	// attn is fusedOp.attn, or nil.
	attn *attentionState
	// outLoss is fusedOp.outLoss, or nil.
	outLoss *outputLossState
	// tied is fusedOp.tied, or nil.
	tied *tiedState
}

// kernel holds a kernel's two instantiations.
type kernel struct {
	f32 func(*args[float32])
	f64 func(*args[float64])
}

func kernelOf(f32 func(*args[float32]), f64 func(*args[float64])) kernel {
	return kernel{f32, f64}
}

// derive emits a backward node of the same graph as op.
func (op *fusedOp) derive(kind string, k kernel, ins []argKind, shape tensor.Shape, inputs ...*G.Node) (*G.Node, error) {
	d := &fusedOp{kind: kind, p: op.p, ins: ins, shape: shape, dt: op.dt, team: op.team, mem: op.mem, stats: op.stats, attn: op.attn, outLoss: op.outLoss, tied: op.tied, run: k}
	return G.ApplyOp(d, inputs...)
}

func (op *fusedOp) Arity() int { return len(op.ins) }

func (op *fusedOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	typeOf := func(k argKind) hm.Type {
		switch {
		case k == intVector:
			return G.TensorType{Dims: 1, Of: tensor.Int}
		case k == 0:
			return a
		}
		return G.TensorType{Dims: int(k), Of: a}
	}
	ts := make([]hm.Type, 0, len(op.ins)+1)
	for _, k := range op.ins {
		ts = append(ts, typeOf(k))
	}
	ts = append(ts, typeOf(argKind(len(op.shape))))
	return hm.NewFnType(ts...)
}

func (op *fusedOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if len(op.shape) == 0 {
		return tensor.ScalarShape(), nil
	}
	return op.shape.Clone(), nil
}

func (op *fusedOp) ReturnsPtr() bool  { return false }
func (op *fusedOp) CallsExtern() bool { return false }
func (op *fusedOp) OverwritesInput() int {
	if op.inPlace {
		return 0
	}
	return -1
}

func (op *fusedOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%+v%v", op.kind, op.p, op.shape) }

func (op *fusedOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

func (op *fusedOp) String() string { return op.kind }

// DiffWRT and SymDiff make forward ops differentiable (G.SDOp).
func (op *fusedOp) DiffWRT(n int) []bool {
	if op.wrt == nil {
		return make([]bool, n)
	}
	return op.wrt
}

func (op *fusedOp) SymDiff(in G.Nodes, out, dOut *G.Node) (G.Nodes, error) {
	if op.grad == nil {
		return nil, fmt.Errorf("%s is not differentiable", op.kind)
	}
	return op.grad(op, in, out, dOut)
}

// Do runs the kernel into the op's own output buffer; see fusedOp.
func (op *fusedOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != len(op.ins) {
		return nil, fmt.Errorf("%s: %d inputs, want %d", op.kind, len(vals), len(op.ins))
	}
	switch {
	case op.inPlace:
		op.out = vals[0]
	case op.takeLoan(vals):
	default:
		op.ensureOutput()
	}
	var err error
	switch op.dt {
	case tensor.Float32:
		err = runKernel(op, &op.a32, &op.scalarIn32, op.run.f32, vals)
	case tensor.Float64:
		err = runKernel(op, &op.a64, &op.scalarIn64, op.run.f64, vals)
	default:
		err = fmt.Errorf("%s: unsupported dtype %v", op.kind, op.dt)
	}
	if err != nil {
		return nil, err
	}
	op.doneReading()
	return op.out, nil
}

// ensureOutput gives op its output buffer for this run: lent (unless a
// kernel that writes op's output has borrowed it already, attention.go's
// output), or op's own, made on the first run.
func (op *fusedOp) ensureOutput() {
	switch {
	case (op.uses > 0 || op.held) && op.lentBuf == nil:
		op.borrow()
	case op.out == nil:
		op.out = op.newOutput()
	}
}

func (op *fusedOp) newOutput() G.Value {
	if len(op.shape) > 0 {
		return tensor.New(tensor.Of(op.dt), tensor.WithShape(op.shape...))
	}
	if op.dt == tensor.Float64 {
		return G.NewF64(0)
	}
	return G.NewF32(0)
}

// runKernel unpacks the Gorgonia values into slices, runs f and, for a
// scalar output, stores the kernel's one-element result.
func runKernel[F gemm.Float](op *fusedOp, a *args[F], scalars *[]F, f func(*args[F]), vals []G.Value) error {
	a.in, a.ids, a.ints = a.in[:0], nil, a.ints[:0]
	if *scalars == nil {
		*scalars = make([]F, len(vals)+1)
	}
	for i, v := range vals {
		if d, ok := v.(*tensor.Dense); ok && !d.IsScalar() {
			if f, ok := floatsOf[F](d); ok {
				a.in = append(a.in, f)
				continue
			}
		}
		switch d := v.Data().(type) {
		case []F:
			a.in = append(a.in, d)
		case F:
			(*scalars)[i] = d
			a.in = append(a.in, (*scalars)[i:i+1])
		case []int:
			if a.ids == nil {
				a.ids = d
			}
			a.ints = append(a.ints, d)
		default:
			return fmt.Errorf("%s: input %d holds %T, want %T", op.kind, i, d, []F(nil))
		}
	}
	a.ws, a.t, a.p, a.stats, a.attn, a.outLoss, a.tied = op.team.whole, op.team, &op.p, op.stats, op.attn, op.outLoss, op.tied
	if d, ok := op.out.(*tensor.Dense); ok && !d.IsScalar() {
		if out, ok := floatsOf[F](d); ok {
			a.out = out
			f(a)
			return nil
		}
	}
	last := len(vals)
	a.out = (*scalars)[last : last+1]
	f(a)
	switch s := op.out.(type) {
	case *G.F32:
		*s = G.F32(float32(a.out[0]))
	case *G.F64:
		*s = G.F64(float64(a.out[0]))
	}
	return nil
}

// floatsOf returns d's entries when they are of type F, as Data would
// but without its reflection and two allocations: a run reads every input
// and output of every fused op this way, ~1,800 reads per training step at
// nanoGPT's CPU shape.
func floatsOf[F gemm.Float](d *tensor.Dense) ([]F, bool) {
	switch {
	case unsafe.Sizeof(F(0)) == 4 && d.Dtype() == tensor.Float32:
		f := d.Float32s()
		return unsafe.Slice((*F)(unsafe.Pointer(unsafe.SliceData(f))), len(f)), true
	case unsafe.Sizeof(F(0)) == 8 && d.Dtype() == tensor.Float64:
		f := d.Float64s()
		return unsafe.Slice((*F)(unsafe.Pointer(unsafe.SliceData(f))), len(f)), true
	}
	return nil, false
}
