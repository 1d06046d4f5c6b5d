package tape

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/internal/pool"
)

// A training step splits its batch into shards: graphs of B/S sequences
// each that read the same parameter tensors, run side by side (one
// goroutine each) and sum their gradients in shard order. Why: splitting
// every op of one graph over the cores costs a wait per op (≈ 180 per step
// at nanoGPT's CPU shape) and moves each activation between the cores'
// caches at every op, whose split differs from the last op's; at that
// shape two cores ran a step only 1.3–1.5× faster than one. A shard keeps
// its activations in its own core's cache from the first op to the last,
// and the cores meet twice per step (the gradient sum, the update).
//
// The number of shards depends on the model and the batch alone, never on
// the thread count, and the sums run in a fixed order, so the weights
// after a run are the same bits for every --threads (TestThreadsGiveSameWeights).

// shardMinActivation is the smallest activation (rows × embedding) a shard
// may have: below it one graph's kernels are short enough that a second
// graph's fixed costs (its tape, its gradient tensors) outweigh what it
// saves. The CPU shape's half batch is 6 × 64 × 128 = 49k values. A
// variable so that tests can shard small graphs.
var shardMinActivation = 1 << 15

// maxShards bounds the shards of one step. Two: on a machine of more
// cores each shard's ops split over the rest (package fused's team). See
// bench/NOTES.md for what more shards would give on 8 or 16 cores.
const maxShards = 2

// Shards is the number of graphs a fused training step of batch sequences
// of spec runs in: the largest S ≤ maxShards that divides the batch and
// leaves each shard at least shardMinActivation values per activation;
// 1 for an unfused graph (its Gorgonia ops are not known to be safe on two
// goroutines at once).
func Shards(spec config.Model, batch int, be graph.Backend) int {
	if be.Unfused {
		return 1
	}
	for s := maxShards; s > 1; s-- {
		if batch%s == 0 && batch/s*spec.Context*spec.Embedding >= shardMinActivation {
			return s
		}
	}
	return 1
}

// CompileTraining builds and compiles the training graph of spec at
// o.Batch sequences: one graph, or Shards of them sharing the first's
// parameters, behind one Program whose Run splits each batch over them.
// o.Memory serves the first shard (the evaluation graphs may share it:
// they never run during a step); the others get a Memory each, as they
// run at the same time. Its loss and gradients alone are read after a run
// (CompileLoss): the logits and attention weights are lent.
func CompileTraining(spec config.Model, o graph.Options) (*Program, error) {
	s := Shards(spec, o.Batch, o.Backend)
	if s == 1 {
		m, err := graph.Build(spec, o)
		if err != nil {
			return nil, err
		}
		return CompileLoss(m, true)
	}
	threads := o.Threads
	if threads <= 0 {
		threads = 1
	}
	so := o
	so.Batch = o.Batch / s
	// Each shard's kernels get an equal share of the cores beyond one per
	// shard (none at 2 threads and 2 shards).
	so.Threads = max(1, threads/s)
	shards := make([]*Program, s)
	for k := range shards {
		if k > 0 {
			so.Memory = fused.NewMemory()
			// The shard reads the first shard's parameter tensors themselves.
			so.Weights = graph.SharedWith(shards[0].Params)
		}
		m, err := graph.Build(spec, so)
		if err != nil {
			return nil, err
		}
		if shards[k], err = CompileLoss(m, true); err != nil {
			return nil, err
		}
	}
	p := shards[0]
	p.shards = shards
	p.workers = pool.New(min(threads, s))
	p.runShard = p.shardPart
	return p, nil
}

// shardPart runs shard k on its slice of the batch under way.
func (p *Program) shardPart(k int) {
	sh := p.shards[k]
	n := len(p.batchTokens) / len(p.shards)
	if p.dropoutSet {
		sh.Model.SetDropout(p.dropoutSeed, p.dropoutRun*uint64(len(p.shards))+uint64(k))
	}
	var targets []int
	if p.batchTargets != nil {
		targets = p.batchTargets[k*n : (k+1)*n]
	}
	p.shardErrs[k] = sh.runOne(p.batchTokens[k*n:(k+1)*n], targets)
}

// runShards runs every shard on its part of the batch, side by side, then
// leaves the batch's loss and gradients where an unsharded program has
// them: the mean over the shards, in the first shard's tensors.
func (p *Program) runShards(tokens, targets []int) error {
	s := len(p.shards)
	if len(tokens)%s != 0 {
		return fmt.Errorf("run: %d tokens do not split into %d shards", len(tokens), s)
	}
	if p.shardErrs == nil {
		p.shardErrs = make([]error, s)
	}
	p.batchTokens, p.batchTargets = tokens, targets
	p.workers.Run(s, p.runShard)
	p.batchTokens, p.batchTargets = nil, nil
	for k, err := range p.shardErrs {
		if err != nil {
			return fmt.Errorf("shard %d: %w", k, err)
		}
	}
	p.loss = 0
	for _, sh := range p.shards {
		p.loss += scalarOf(sh.Model.Loss.Value())
	}
	p.loss /= float64(s)
	p.sumGrads()
	// The mean is in the first shard's gradients: the others' buffers
	// serve the next run.
	for _, sh := range p.shards[1:] {
		sh.grads.GiveBack()
	}
	return nil
}

// sumGrads adds every shard's gradients to the first shard's, in shard
// order, and scales the sums by 1/S: the gradient of the mean loss over
// the whole batch. Each entry is one goroutine's, in the same order
// whatever the split.
func (p *Program) sumGrads() {
	// A gradient's buffer is lent (ReleaseGrads): it may be another every run.
	if p.gradData == nil {
		p.gradData = make([][]any, len(p.shards))
	}
	for k, sh := range p.shards {
		if len(p.gradData[k]) != len(sh.Grads) {
			p.gradData[k] = make([]any, len(sh.Grads))
		}
		for i, g := range sh.Grads {
			p.gradData[k][i] = sameSlice(p.gradData[k][i], g.Value())
		}
	}
	if p.gradOffsets == nil {
		p.gradOffsets = make([]int, len(p.Grads)+1)
		for i, g := range p.Grads {
			p.gradOffsets[i+1] = p.gradOffsets[i] + g.Value().Shape().TotalSize()
		}
	}
	total := p.gradOffsets[len(p.Grads)]
	scale := 1 / float64(len(p.shards))
	p.Split(total, total*len(p.shards), func(lo, hi int) {
		for i := range p.Grads {
			a, b := max(lo, p.gradOffsets[i]), min(hi, p.gradOffsets[i+1])
			if a >= b {
				continue
			}
			a, b = a-p.gradOffsets[i], b-p.gradOffsets[i]
			switch g := p.gradData[0][i].(type) {
			case []float32:
				sumShards(g, p.gradData, i, a, b, float32(scale))
			case []float64:
				sumShards(g, p.gradData, i, a, b, scale)
			}
		}
	})
}

// sameSlice returns v's entries: last, when it holds them already (a
// gradient lent the same range as in the last run), else v.Data().
func sameSlice(last any, v G.Value) any {
	if fused.HoldsEntries(v, last) {
		return last
	}
	return v.Data()
}

// sumShards sets sum[j] = (sum[j] + shard 1's [j] + …) · scale for j in [a, b).
func sumShards[F float32 | float64](sum []F, data [][]any, i, a, b int, scale F) {
	for k := 1; k < len(data); k++ {
		g := data[k][i].([]F)[a:b]
		for j, v := range g {
			sum[a+j] += v
		}
	}
	for j := a; j < b; j++ {
		sum[j] *= scale
	}
}

// splitShards is Split for a sharded program: over the shards' goroutines.
func (p *Program) splitShards(n, work int, f func(lo, hi int)) {
	parts := min(p.workers.Size(), n)
	if parts <= 1 || work < shardMinSplitWork {
		f(0, n)
		return
	}
	p.splitF, p.splitN, p.splitParts = f, n, parts
	p.workers.Run(parts, p.splitPart)
	p.splitF = nil
}

// shardMinSplitWork: as package fused's minSplitWork, the work below which
// splitting costs more than it saves.
const shardMinSplitWork = 1 << 15

func (p *Program) splitPart(w int) {
	p.splitF(p.splitN*w/p.splitParts, p.splitN*(w+1)/p.splitParts)
}
