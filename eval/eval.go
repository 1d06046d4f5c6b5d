// Package eval scores a model on a corpus's test split: the seed's test
// loss, and the prefix-only loss that shows whether a model cheats.
package eval

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
)

// TestLoss evaluates a compiled model (built with the loss) on data's test
// split as the seed defines it: the mean over the split's whole batches, in
// order, of each batch's mean cross-entropy. It returns the loss and the
// number of batches.
func TestLoss(p *graph.Program, data *corpus.Dataset) (float64, int, error) {
	sum := 0.0
	n, err := eachTestBatch(data, p.Batch, func(x, y []int) error {
		if err := p.Run(x, y); err != nil {
			return err
		}
		sum += p.Loss()
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
func ModelTestLoss(m *modelfile.Model, data *corpus.Dataset, batch int) (float64, int, error) {
	g, err := graph.Build(m.Spec, graph.Options{Batch: batch, Loss: true, Unfused: graph.UnfusedFromEnv()})
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
	return TestLoss(p, data)
}

// Progress is told after each test batch how many of total are done; an
// error stops the evaluation and is returned (an interrupt, say).
type Progress func(done, total int) error

// PrefixOnly scores every position of the same test windows seeing only its
// prefix, as generation does: position i of a window is predicted from the
// window's first i+1 tokens alone. For a causal model this equals TestLoss;
// a model without the mask scores far worse, because its plain loss read
// the very tokens it predicts.
func PrefixOnly(m *modelfile.Model, data *corpus.Dataset, batch int) (float64, int, error) {
	return PrefixOnlyProgress(m, data, batch, nil)
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
//     TestPrefixOnlyAgreesWithOnePassPerPrefix checks all three against
//     the one-pass-per-prefix definition.
func PrefixOnlyProgress(m *modelfile.Model, data *corpus.Dataset, batch int, progress Progress) (float64, int, error) {
	spec := m.Spec
	switch {
	case spec.Mask:
	case spec.Blocks == 1:
		spec.Mask = true
	default:
		return perPrefix(m, data, batch, progress)
	}
	g, err := graph.Build(spec, graph.Options{Batch: batch, Unfused: graph.UnfusedFromEnv()})
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
// i+1 tokens. That is T graph runs per batch, so the batches are shared
// out among up to GOMAXPROCS workers, each with its own graphs; every
// batch's sum is kept apart and they are added up in batch order, so the
// result does not depend on the number of workers.
func perPrefix(m *modelfile.Model, data *corpus.Dataset, batch int, progress Progress) (float64, int, error) {
	B, T := batch, data.Context
	n := data.TestBatches(B)
	if n == 0 {
		return 0, 0, fmt.Errorf("the test split has %d windows, fewer than one batch of %d", data.NumTest(), B)
	}
	sums := make([]float64, n)
	workers := min(runtime.GOMAXPROCS(0), maxWorkers, n)
	var (
		mu       sync.Mutex // guards done, firstErr and the progress calls
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	// finish records one batch (or a failure) and reports whether to go on.
	finish := func(err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if err == nil && firstErr == nil {
			done++
			if progress != nil {
				err = progress(done, n)
			}
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return firstErr == nil
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(first, last int) { // batches first..last-1
			defer wg.Done()
			pp := newPrefixPrograms(m, B, T)
			defer pp.close()
			x, y, windows := make([]int, B*T), make([]int, B*T), make([]int, B)
			for b := first; b < last; b++ {
				for i := range windows {
					windows[i] = b*B + i
				}
				data.TestBatch(x, y, windows)
				sum, err := pp.batchLoss(x, y)
				sums[b] = sum
				if !finish(err) {
					return
				}
			}
		}(w*n/workers, (w+1)*n/workers)
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	total := 0.0
	for _, s := range sums {
		total += s
	}
	return total / float64(n*B*T), n, nil
}

// maxWorkers bounds perPrefix's goroutines: each holds T graphs.
const maxWorkers = 8

// prefixPrograms are one worker's graphs, progs[L] seeing L positions,
// each built on first use.
type prefixPrograms struct {
	m     *modelfile.Model
	B, T  int
	progs []*graph.Program
	in    []int
}

func newPrefixPrograms(m *modelfile.Model, B, T int) *prefixPrograms {
	return &prefixPrograms{m: m, B: B, T: T, progs: make([]*graph.Program, T+1), in: make([]int, 0, B*T)}
}

func (pp *prefixPrograms) close() {
	for _, p := range pp.progs {
		if p != nil {
			p.Close()
		}
	}
}

func (pp *prefixPrograms) program(L int) (*graph.Program, error) {
	if pp.progs[L] != nil {
		return pp.progs[L], nil
	}
	g, err := graph.Build(pp.m.Spec, graph.Options{Batch: pp.B, SeqLen: L, Unfused: graph.UnfusedFromEnv()})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pp.m.Path, err)
	}
	if err := pp.m.Apply(g.Params); err != nil {
		return nil, err
	}
	pp.progs[L], err = graph.Compile(g, false)
	return pp.progs[L], err
}

// batchLoss is the sum of the prefix-only cross-entropies of one batch's
// B·T positions (inputs x, targets y).
func (pp *prefixPrograms) batchLoss(x, y []int) (float64, error) {
	B, T, V := pp.B, pp.T, pp.m.Spec.Vocab
	sum := 0.0
	for L := 1; L <= T; L++ {
		pp.in = pp.in[:0]
		for s := 0; s < B; s++ {
			pp.in = append(pp.in, x[s*T:s*T+L]...)
		}
		p, err := pp.program(L)
		if err != nil {
			return 0, err
		}
		if err := p.Run(pp.in, nil); err != nil {
			return 0, err
		}
		logits := graph.Float64s(p.Logits.Value())
		for s := 0; s < B; s++ {
			sum += crossEntropy(logits[(s*L+L-1)*V:(s*L+L)*V], y[s*T+L-1])
		}
	}
	return sum, nil
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
