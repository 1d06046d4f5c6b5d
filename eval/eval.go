// Package eval scores a model on a corpus's test split: the seed's test
// loss, and the prefix-only loss that shows whether a model cheats.
package eval

import (
	"context"
	"fmt"
	"math"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
)

// TestLoss evaluates a compiled model (built with the loss) on data's test
// split as the seed defines it: the mean over the split's whole batches, in
// order, of each batch's mean cross-entropy. It returns the loss and the
// number of batches.
func TestLoss(p *graph.Program, data *corpus.Dataset) (float64, int, error) {
	return TestLossContext(context.Background(), p, data)
}

// TestLossContext is TestLoss that stops between batches, returning ctx's
// error, when ctx is done: an evaluation over a large test split takes
// long enough that Ctrl-C must not wait for it.
func TestLossContext(ctx context.Context, p *graph.Program, data *corpus.Dataset) (float64, int, error) {
	return testLoss(ctx, p, data, nil)
}

// testLoss is TestLoss, stopping when ctx is done and reporting each batch
// to progress (nil: no one).
func testLoss(ctx context.Context, p *graph.Program, data *corpus.Dataset, progress Progress) (float64, int, error) {
	sum, done, total := 0.0, 0, data.TestBatches(p.Batch)
	n, err := eachTestBatch(data, p.Batch, func(x, y []int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.Run(x, y); err != nil {
			return err
		}
		sum += p.Loss()
		done++
		if progress != nil {
			return progress(done, total)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return sum / float64(n), n, nil
}

// eachTestBatch calls f with the inputs and targets (B·T each) of the test
// split's whole batches of size B, in order, and returns how many there
// were; the incomplete last batch is left out, as the seed's test loss does.
func eachTestBatch(data *corpus.Dataset, B int, f func(x, y []int) error) (int, error) {
	n := data.TestBatches(B)
	if n == 0 {
		return 0, fmt.Errorf("the test split has %d windows, fewer than one batch of %d", data.NumTest(), B)
	}
	T := data.Context
	x, y, w := make([]int, B*T), make([]int, B*T), make([]int, B)
	for b := 0; b < n; b++ {
		for i := range w {
			w[i] = b*B + i
		}
		data.TestBatch(x, y, w)
		if err := f(x, y); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// ModelTestLoss builds m's graph for batches of size batch and returns its
// test loss on data.
func ModelTestLoss(m *graph.SavedModel, data *corpus.Dataset, batch int, be graph.Backend) (float64, int, error) {
	return ModelTestLossProgress(m, data, batch, be, nil)
}

// ModelTestLossProgress is ModelTestLoss reporting its progress (nil: none).
func ModelTestLossProgress(m *graph.SavedModel, data *corpus.Dataset, batch int, be graph.Backend, progress Progress) (float64, int, error) {
	g, err := graph.Build(m.Spec, graph.Options{Batch: batch, Loss: true, Backend: be})
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", m.Path, err) // the metadata is at fault
	}
	if err := m.Apply(g.Params); err != nil {
		return 0, 0, err
	}
	p, err := graph.Compile(g, false)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	return testLoss(context.Background(), p, data, progress)
}

// Progress is told after each test batch how many of total are done; an
// error stops the evaluation and is returned (an interrupt, say).
type Progress func(done, total int) error

// PrefixOnly scores every position of the same test windows seeing only its
// prefix, as generation does: position i of a window is predicted from the
// window's first i+1 tokens alone. For a causal model this equals TestLoss;
// a model without the mask scores far worse, because its plain loss read
// the very tokens it predicts.
func PrefixOnly(m *graph.SavedModel, data *corpus.Dataset, batch int, be graph.Backend) (float64, int, error) {
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
func PrefixOnlyProgress(m *graph.SavedModel, data *corpus.Dataset, batch int, be graph.Backend, progress Progress) (float64, int, error) {
	spec := m.Spec
	switch {
	case spec.Mask:
	case spec.Blocks == 1:
		spec.Mask = true
	default:
		return perPrefix(m, data, batch, be, progress)
	}
	g, err := graph.Build(spec, graph.Options{Batch: batch, Backend: be})
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", m.Path, err)
	}
	if err := m.Apply(g.Params); err != nil {
		return 0, 0, err
	}
	p, err := graph.Compile(g, false)
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
func perPrefix(m *graph.SavedModel, data *corpus.Dataset, batch int, be graph.Backend, progress Progress) (float64, int, error) {
	B, T, V := batch, data.Context, m.Spec.Vocab
	progs := make([]*graph.Program, T+1) // progs[L] sees L positions; built on first use
	defer func() {
		for _, p := range progs {
			if p != nil {
				p.Close()
			}
		}
	}()
	program := func(L int) (*graph.Program, error) {
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
		progs[L], err = graph.Compile(g, false)
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
