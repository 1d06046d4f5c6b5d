// Package eval scores a model on a corpus's test split: the seed's test
// loss, and the prefix-only loss that shows whether a model cheats.
package eval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/savedmodel"
)

// TestLoss evaluates a compiled model (built with the loss) on data's test
// split as the seed defines it: the mean over the split's whole batches, in
// order, of each batch's mean cross-entropy. It returns the loss and the
// number of batches. It runs every batch through p; Graphs.TestLoss gives
// the same loss with fewer, larger runs.
func TestLoss(p *tape.Program, data *corpus.Dataset) (float64, int, error) {
	return TestLossContext(context.Background(), p, data)
}

// TestLossContext is TestLoss that stops between batches, returning ctx's
// error, when ctx is done: an evaluation over a large test split takes
// long enough that Ctrl-C must not wait for it.
func TestLossContext(ctx context.Context, p *tape.Program, data *corpus.Dataset) (float64, int, error) {
	return Graphs{Batch: p}.TestLoss(ctx, data, nil)
}

// Graphs are the forward-only programs (built with the loss, sharing one
// model's weights) that compute a test loss defined over batches of B
// windows — each batch's mean cross-entropy, averaged over the batches —
// in as few runs as they allow.
//
// A run of Chunk covers k whole batches at once, so the windows are the
// seed's, and its mean loss counts k times in the average: every window
// has the same T tokens, so this is the mean of the batches' means, equal
// to the per-batch loss up to float64 rounding (and the float32 rounding
// of each run's mean, for a float32 model). The batches after the last
// whole chunk run through Batch: the graph is static, and a second,
// smaller chunk graph would cost a build for at most k−1 batches. Without
// a Chunk every batch runs through Batch, exactly as TestLoss.
//
// With Parts > 1, Batch holds a part of a batch, B/Parts windows, and a
// batch runs as Parts runs of it, in order; the batch's loss is the mean
// of the parts' (equal to one run's up to the same roundings). A
// training run's evaluation takes its step's shard size this way
// (tape.CompileTraining): its graph then borrows the buffers of the
// first shard's sizes, where a graph of the whole batch would need
// buffers of its own (360 MiB for GPT-2 124M at 4 × 256 tokens).
type Graphs struct {
	Batch *tape.Program // B/Parts windows per run: a part of the test loss's batch
	Parts int           // runs of Batch per batch of B windows; 0 means 1
	Chunk *tape.Program // k·B windows per run (config.Model.EvalBatch); nil: none
}

// batch is the test loss's batch: B windows.
func (g Graphs) batch() int { return g.Batch.Batch * g.parts() }

func (g Graphs) parts() int { return max(1, g.Parts) }

// TestLoss is the seed's test loss over data's test split (see the
// package's TestLoss), stopping between runs with ctx's error when ctx is
// done, and reporting the batches done to progress (nil: no one) after
// each run. It returns the loss and the number of batches.
func (g Graphs) TestLoss(ctx context.Context, data *corpus.Dataset, progress Progress) (float64, int, error) {
	B, T := g.batch(), data.Context
	n, err := wholeTestBatches(data, B)
	if err != nil {
		return 0, 0, err
	}
	var windows []int
	loss, err := g.run(ctx, n, T, func(x, y []int, first int) error {
		windows = windows[:0]
		for i := range len(x) / T {
			windows = append(windows, first+i)
		}
		return data.TestBatch(x, y, windows)
	}, progress)
	if err != nil {
		return 0, 0, err
	}
	return loss, n, nil
}

// RandomTestLoss is the test loss over n batches of windows at random
// offsets of data's test split drawn from rng, as nanoGPT's
// estimate_loss (train.eval_batches). corpus.Dataset.RandomBatch draws
// one offset per window in order, so a run of k batches reads the very
// windows k runs of one batch would.
func (g Graphs) RandomTestLoss(ctx context.Context, data *corpus.Dataset, n int, rng *rand.Rand) (float64, error) {
	return g.run(ctx, n, data.Context, func(x, y []int, _ int) error {
		return data.RandomBatch(x, y, true, rng)
	}, nil)
}

// run averages the loss of batches batches of B windows (T tokens each):
// runs of Chunk while k batches remain, then of Batch. fill fills x and y
// with the windows of a run, len(x)/T of them from window first on.
func (g Graphs) run(ctx context.Context, batches, T int, fill func(x, y []int, first int) error, progress Progress) (float64, error) {
	B, k := g.batch(), 1
	if g.Chunk != nil {
		if k = g.Chunk.Batch / B; g.Chunk.Batch != k*B {
			return 0, fmt.Errorf("evaluation: a chunk of %d windows is not a whole number of batches of %d", g.Chunk.Batch, B)
		}
	}
	x, y := make([]int, k*B*T), make([]int, k*B*T)
	sum := 0.0
	for done := 0; done < batches; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		p, runBatches := g.Batch, 1
		if g.Chunk != nil && batches-done >= k {
			p, runBatches = g.Chunk, k
		}
		xs, ys := x[:runBatches*B*T], y[:runBatches*B*T]
		if err := fill(xs, ys, done*B); err != nil {
			return 0, err
		}
		loss, err := runParts(p, xs, ys, len(xs)/p.Batch/T)
		if err != nil {
			return 0, err
		}
		sum += loss * float64(runBatches) // its mean over k batches stands for k batch means
		done += runBatches
		if progress != nil {
			if err := progress(done, batches); err != nil {
				return 0, err
			}
		}
	}
	return sum / float64(batches), nil
}

// runParts runs p on x and y as parts runs of p's batch, in order, and
// returns the mean of their losses: a run's own loss when parts is 1.
func runParts(p *tape.Program, x, y []int, parts int) (float64, error) {
	n, loss := len(x)/parts, 0.0
	for i := range parts {
		if err := p.Run(x[i*n:(i+1)*n], y[i*n:(i+1)*n]); err != nil {
			return 0, err
		}
		loss += p.Loss()
	}
	return loss / float64(parts), nil
}

// wholeTestBatches is the number of whole batches of B windows in data's
// test split, which the seed's test loss averages over; none is an error.
func wholeTestBatches(data *corpus.Dataset, B int) (int, error) {
	n := data.TestBatches(B)
	if n == 0 {
		return 0, fmt.Errorf("the test split has %d windows, fewer than one batch of %d", data.NumTest(), B)
	}
	return n, nil
}

// eachTestBatch calls f with the inputs and targets (B·T each) of the test
// split's whole batches of size B, in order, and returns how many there
// were; the incomplete last batch is left out, as the seed's test loss does.
func eachTestBatch(data *corpus.Dataset, B int, f func(x, y []int) error) (int, error) {
	n, err := wholeTestBatches(data, B)
	if err != nil {
		return 0, err
	}
	T := data.Context
	x, y, w := make([]int, B*T), make([]int, B*T), make([]int, B)
	for b := 0; b < n; b++ {
		for i := range w {
			w[i] = b*B + i
		}
		if err := data.TestBatch(x, y, w); err != nil {
			return 0, err
		}
		if err := f(x, y); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// ModelTestLoss builds m's evaluation graphs for batches of size batch
// and returns its test loss on data.
func ModelTestLoss(m *savedmodel.Model, data *corpus.Dataset, batch int, be graph.Backend) (float64, int, error) {
	return ModelTestLossProgress(m, data, batch, be, nil)
}

// ModelTestLossProgress is ModelTestLoss reporting its progress (nil: none).
// It builds a graph at batch and, when the model's EvalBatch is larger, one
// at that batch (Graphs); the two never run at once and share their
// intermediate buffers.
func ModelTestLossProgress(m *savedmodel.Model, data *corpus.Dataset, batch int, be graph.Backend, progress Progress) (float64, int, error) {
	mem := fused.NewMemory()
	var g Graphs
	defer func() { g.Close() }() // what was built by the time it returns
	var err error
	if g.Batch, err = compileForward(m, m.Spec, batch, true, mem, be); err != nil {
		return 0, 0, err
	}
	if e := m.Spec.EvalBatch(batch, data.TestBatches(batch)); e > batch {
		if g.Chunk, err = compileForward(m, m.Spec, e, true, mem, be); err != nil {
			return 0, 0, err
		}
	}
	return g.TestLoss(context.Background(), data, progress)
}

// Close releases the programs.
func (g Graphs) Close() {
	for _, p := range []*tape.Program{g.Batch, g.Chunk} {
		if p != nil {
			p.Close()
		}
	}
}

// compileForward builds spec's forward-only graph for batch windows, with
// the loss (its loss alone readable after a run) or without it (its
// logits readable), sets m's weights in it and compiles it.
func compileForward(m *savedmodel.Model, spec config.Model, batch int, loss bool, mem *fused.Memory, be graph.Backend) (*tape.Program, error) {
	g, err := graph.Build(spec, graph.Options{Batch: batch, Loss: loss, Memory: mem, Backend: be})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err) // the metadata is at fault
	}
	if err := m.Apply(g.Params); err != nil {
		return nil, err
	}
	if loss {
		return tape.CompileLoss(g, false) // its loss alone is read
	}
	return tape.Compile(g, false)
}

// Progress is told after each test batch how many of total are done; an
// error stops the evaluation and is returned (an interrupt, say).
type Progress func(done, total int) error

// PrefixOnly scores every position of the same test windows seeing only its
// prefix, as generation does: position i of a window is predicted from the
// window's first i+1 tokens alone. For a causal model this equals TestLoss;
// a model without the mask scores far worse, because its plain loss read
// the very tokens it predicts.
func PrefixOnly(m *savedmodel.Model, data *corpus.Dataset, batch int, be graph.Backend) (float64, int, error) {
	return PrefixOnlyProgress(m, data, batch, be, nil)
}

// PrefixOnlyProgress is PrefixOnly reporting its progress (nil: none).
//
// It takes the cheapest computation that gives the prefix-only numbers:
//   - a causal model: one pass over each window. The mask already limits
//     position i to its prefix, so every position's loss is read off the
//     same logits the plain loss uses.
//   - an unmasked model of one block: one pass of the same weights with the
//     causal mask switched on. Attention is the only place positions meet,
//     and with one block the mask gives position i exactly the attention
//     it would have in a graph of i+1 positions.
//   - an unmasked model of several blocks: one pass per prefix length, as
//     generation does. The mask is not enough here: in a graph of i+1
//     positions, the first block's output at position j < i has attended
//     to positions up to i, which a masked pass would hide from it.
//
// TestPrefixOnlyAgreesWithOnePassPerPrefix checks the first two against
// the one-pass-per-prefix definition, TestPrefixOnlyIsWhatGenerationSees
// the third against the sampler.
//
// It runs batch windows at a time, not at the larger EvalBatch of the
// plain loss: it is a one-off diagnostic, and its per-prefix case builds
// up to one graph per prefix length, whose memory a larger batch would
// multiply by as many.
func PrefixOnlyProgress(m *savedmodel.Model, data *corpus.Dataset, batch int, be graph.Backend, progress Progress) (float64, int, error) {
	spec := m.Spec
	switch {
	case spec.Mask:
	case spec.Blocks == 1:
		spec.Mask = true
	default:
		return perPrefix(m, data, batch, be, progress)
	}
	p, err := compileForward(m, spec, batch, false, nil, be)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	T, V := data.Context, spec.Vocab
	sum, done, total := 0.0, 0, data.TestBatches(batch)
	n, err := eachTestBatch(data, batch, func(x, y []int) error {
		if err := p.Run(x, nil); err != nil {
			return err
		}
		logits := graph.Float64s(p.Logits.Value())
		for i := 0; i < batch*T; i++ {
			sum += crossEntropy(logits[i*V:(i+1)*V], y[i])
		}
		done++
		if progress != nil {
			return progress(done, total)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return sum / float64(n*batch*T), n, nil
}

// perPrefix is the prefix-only loss by its definition: position i of a
// window is predicted by a graph of i+1 positions fed the window's first
// i+1 tokens.
func perPrefix(m *savedmodel.Model, data *corpus.Dataset, batch int, be graph.Backend, progress Progress) (float64, int, error) {
	B, T, V := batch, data.Context, m.Spec.Vocab
	progs := make([]*tape.Program, T+1) // progs[L] sees L positions; built on first use
	defer func() {
		for _, p := range progs {
			if p != nil {
				p.Close()
			}
		}
	}()
	program := func(L int) (*tape.Program, error) {
		if progs[L] != nil {
			return progs[L], nil
		}
		g, err := graph.Build(m.Spec, graph.Options{Batch: B, SeqLen: L, Backend: be})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Path, err)
		}
		if err := m.Apply(g.Params); err != nil {
			return nil, err
		}
		progs[L], err = tape.Compile(g, false)
		return progs[L], err
	}
	sum, done, total := 0.0, 0, data.TestBatches(B)
	in := make([]int, 0, B*T)
	n, err := eachTestBatch(data, B, func(x, y []int) error {
		for L := 1; L <= T; L++ {
			in = in[:0]
			for s := 0; s < B; s++ {
				in = append(in, x[s*T:s*T+L]...)
			}
			p, err := program(L)
			if err != nil {
				return err
			}
			if err := p.Run(in, nil); err != nil {
				return err
			}
			logits := graph.Float64s(p.Logits.Value())
			for s := 0; s < B; s++ {
				sum += crossEntropy(logits[(s*L+L-1)*V:(s*L+L)*V], y[s*T+L-1])
			}
		}
		done++
		if progress != nil {
			return progress(done, total)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return sum / float64(n*B*T), n, nil
}

// crossEntropy is −log softmax(row)[target], computed stably.
func crossEntropy(row []float64, target int) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range row {
		s += math.Exp(v - m)
	}
	return m + math.Log(s) - row[target]
}
