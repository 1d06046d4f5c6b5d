// Package tape runs a built graph of either model on Gorgonia's
// TapeMachine. For the GPT, Program runs a window of tokens (the forward
// pass, and every gradient when training) and CachedProgram one token at
// a time against a key/value cache; for the encoder–decoder,
// TranslationProgram runs the whole model or its encoder or decoder (with
// the gradients when training) and TranslationStepProgram the decoder one
// word at a time against its caches. It compiles the graph once, feeds
// each batch into the same input tensors, runs the tape in the calling
// goroutine (tape.go) and, for a fused graph, runs Gorgonia's own ops on
// the kernels' goroutines and lends the fused ops' buffers (package
// fused's PlanMemory).
//
// Imports run one way: tape imports graph (what the model computes) and
// graph/fused (its kernels); neither imports tape.
package tape

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/internal/pool"
)

// Program is a built model compiled for a TapeMachine: one run computes the
// forward pass and, when the model has a loss, every parameter's gradient.
type Program struct {
	*graph.Model
	Grads []*G.Node // Grads[i] is ∂loss/∂Params[i]; empty without a loss

	// grads lends the gradients' buffers past a run, until ReleaseGrads.
	grads *fused.Loans

	vm      G.VM
	inPlace func() error  // runs the tape in this goroutine; nil: use vm.RunAll (see tape.go)
	tokens  *tensor.Dense // fed to Model.Tokens, reused every run
	targets *tensor.Dense // fed to Model.Targets, reused every run

	// A sharded training program (CompileTraining, shards.go): shards[0]
	// is this program, the others its shards' graphs; nil for one graph.
	shards       []*Program
	workers      *pool.Pool // one goroutine per shard
	runShard     func(k int)
	shardErrs    []error
	batchTokens  []int // the batch under way, split over the shards
	batchTargets []int
	loss         float64 // the last run's mean over the shards
	gradData     [][]any // gradData[k][i]: shard k's gradient i, as a slice
	gradOffsets  []int
	dropoutSet   bool // SetDropout was called: each shard draws its masks
	dropoutSeed  int64
	dropoutRun   uint64
	splitF       func(lo, hi int)
	splitN       int
	splitParts   int
}

// Compile compiles the graph once for a TapeMachine; every later Run reuses
// it. withGrads adds the symbolic gradients of the loss (training); without
// them a run is the forward pass alone (evaluation, sampling).
func Compile(m *graph.Model, withGrads bool) (*Program, error) {
	// The attention weights are read by sampling, attention maps and the
	// tests; a training graph keeps them at no cost (the backward pass
	// needs them until the end anyway). Only an evaluation graph, with a
	// loss and no gradients, lends them: nobody looks at its weights.
	return compile(m, withGrads, withGrads || m.Loss == nil, nil)
}

// CompileLoss compiles a graph built with the loss whose loss (and, with
// withGrads, gradients) alone are read after a run: a training step, an
// evaluation. Its logits and attention weights are lent like any other
// intermediate (graph.Memory): the logits, (B·T, V), are the largest
// tensor of a GPT-2 graph (103 MB at two windows of 256 tokens), and a
// kept buffer is one no other graph of the Memory can reuse. Logits and
// Attention hold nothing readable after a run.
func CompileLoss(m *graph.Model, withGrads bool) (*Program, error) {
	if m.Loss == nil {
		return nil, fmt.Errorf("compile: CompileLoss needs a graph built with the loss")
	}
	return compileKeeping(m, withGrads, nil)
}

// CompileLogits compiles a forward-only graph whose logits alone are read
// after a run: its attention weights are lent, as evaluation's are
// (sampling past the context, where they are an output nobody reads, a
// block's (heads, T, T) each: 600 MB for GPT-2 124M at 1,024 tokens).
func CompileLogits(m *graph.Model) (*Program, error) {
	return compile(m, false, false, nil)
}

// compile is Compile; keepAttention keeps the attention weights readable
// after a run, and also are nodes read after it besides the logits, loss
// and gradients (a prefill's keys and values).
func compile(m *graph.Model, withGrads, keepAttention bool, also []*G.Node) (*Program, error) {
	keep := []*G.Node{m.Logits}
	if keepAttention {
		keep = append(keep, m.Attention...)
	}
	return compileKeeping(m, withGrads, append(keep, also...))
}

// compileKeeping compiles m, its gradients with withGrads; keep are the
// nodes read after a run besides the loss and the gradients, which keep
// their buffers too. The rest is lent.
func compileKeeping(m *graph.Model, withGrads bool, keep []*G.Node) (*Program, error) {
	p := &Program{Model: m}
	if withGrads && m.Loss == nil {
		return nil, fmt.Errorf("compile: gradients need a graph built with the loss")
	}
	if withGrads {
		var err error
		if p.Grads, err = gradients(m.Loss, m.Params); err != nil {
			return nil, err
		}
		if err = m.TieGradients(p.Grads); err != nil {
			return nil, err
		}
	}
	if m.Targets != nil {
		p.targets = tensor.New(tensor.Of(tensor.Int), tensor.WithShape(m.Targets.Shape()...))
	}
	// What is read after a run keeps its buffer; the rest is lent.
	keep = append(keep, p.Grads...)
	if m.Loss != nil {
		keep = append(keep, m.Loss)
	}
	if m.Fused != nil && fuseSums {
		m.Fused.FuseSums(m.G)
	}
	fused.PlanMemory(m.G, keep)
	if withGrads {
		p.grads = fused.LendGradients(m.G, p.Grads)
	}
	p.tokens = tensor.New(tensor.Of(tensor.Int), tensor.WithShape(m.Tokens.Shape()...))
	p.vm, p.inPlace = newMachine(m.G, m.Fused)
	return p, nil
}

// fuseSums: compile makes Gorgonia's sums fused ops (fused.FuseSums). A
// variable so that a test can compare with the graph that keeps them.
var fuseSums = true

// gradients differentiates loss symbolically with respect to each
// parameter, in order.
func gradients(loss *G.Node, params []*graph.Param) ([]*G.Node, error) {
	nodes := make(G.Nodes, len(params))
	for i, prm := range params {
		nodes[i] = prm.Node
	}
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		return nil, fmt.Errorf("differentiating the graph: %w", err)
	}
	return grads, nil
}

// newMachine makes g's TapeMachine, whose fused ops run on f's engine
// (nil for a graph of Gorgonia's primitives alone), and the function that
// runs its tape in the calling goroutine (tape.go).
func newMachine(g *G.ExprGraph, f *fused.Emitter) (G.VM, func() error) {
	var opts []G.VMOpt
	if f != nil {
		opts = append(opts, G.WithEngine(f.Engine()))
	}
	vm := G.NewTapeMachine(g, opts...)
	return vm, runInPlace(vm)
}

// Split calls f on contiguous ranges [lo, hi) that cover [0, n), on the
// goroutines that run the program's kernels, and waits for all of them:
// the optimizer's passes over every parameter between two runs use it.
// work estimates the whole job (about one multiply-add per unit), so that
// small jobs run in the calling goroutine alone; so does everything in an
// unfused program. f must compute each item independently of the range it
// lands in, and must not call Split or Run.
func (p *Program) Split(n, work int, f func(lo, hi int)) {
	if p.shards != nil {
		p.splitShards(n, work, f)
		return
	}
	if p.Fused == nil {
		f(0, n)
		return
	}
	p.Fused.Split(n, work, f)
}

// SetDropout draws the dropout masks of the next runs from (seed, run),
// as graph.Model.SetDropout does; a sharded program's shards draw theirs
// from (seed, run·S + shard), each on its own goroutine.
func (p *Program) SetDropout(seed int64, run uint64) {
	if p.shards == nil {
		p.Model.SetDropout(seed, run)
		return
	}
	p.dropoutSet, p.dropoutSeed, p.dropoutRun = true, seed, run
}

// Shards is the number of graphs a run splits its batch over (1: one graph).
func (p *Program) Shards() int { return max(1, len(p.shards)) }

// Run feeds one batch (B·T token ids and, with a loss, B·T target ids) and
// runs the graph. Outputs stay readable until the next Run. A sharded
// program runs its shards side by side and leaves the mean loss and the
// mean gradients where one graph would (Loss, Grads); its logits and
// attention weights are lent (CompileLoss), not readable.
func (p *Program) Run(tokens, targets []int) error {
	if p.shards != nil {
		return p.runShards(tokens, targets)
	}
	return p.runOne(tokens, targets)
}

// runOne runs this program's own graph on one batch.
func (p *Program) runOne(tokens, targets []int) error {
	if err := feedIDs(p.tokens, p.Model.Tokens, tokens, p.Spec.Vocab, "token"); err != nil {
		return err
	}
	if p.Model.Targets != nil {
		if err := feedIDs(p.targets, p.Model.Targets, targets, p.Spec.Vocab, "target"); err != nil {
			return err
		}
	}
	// Without a Reset first, RunAll silently runs nothing on a second call.
	p.vm.Reset()
	run := p.vm.RunAll
	if p.inPlace != nil {
		run = p.inPlace
	}
	if err := run(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// ReleaseGrads gives the gradients' buffers back to the graph's Memory,
// for the next run's activations and gradients: a training step calls it
// once it has read the gradients of a run (folded them into its sums, or
// updated the weights). Until then, and without it, Grads are readable
// after a run, as the other outputs; after it they are not, until the
// next run.
func (p *Program) ReleaseGrads() {
	if p.shards == nil {
		p.grads.GiveBack()
		return
	}
	for _, sh := range p.shards {
		sh.grads.GiveBack()
	}
}

// Loss is the last run's mean cross-entropy.
func (p *Program) Loss() float64 {
	if p.shards != nil {
		return p.loss
	}
	return scalarOf(p.Model.Loss.Value())
}

// Close releases the machine (a sharded program's machines and goroutines).
func (p *Program) Close() error {
	if p.shards == nil {
		return p.vm.Close()
	}
	p.workers.Close()
	var first error
	for _, sh := range p.shards {
		sh.shards = nil
		if err := sh.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func scalarOf(v G.Value) float64 {
	switch x := v.Data().(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case []float64:
		return x[0]
	case []float32:
		return float64(x[0])
	}
	return 0
}
