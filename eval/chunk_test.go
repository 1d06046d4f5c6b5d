package eval_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/savedmodel"
)

// trainDtype trains testmodel's tiny model in dtype for a few steps, at
// the given embedding and context, and loads it back.
func trainDtype(t *testing.T, dtype string, embedding, context int) *savedmodel.Model {
	t.Helper()
	return trainTiny(t, true, 8, 1e-2, func(c *config.Config) {
		c.Model.Dtype, c.Model.Embedding, c.Model.Context = dtype, embedding, context
	})
}

// forward compiles m's forward-only graph with the loss for batch windows.
func forward(t *testing.T, m *savedmodel.Model, batch int, be graph.Backend) *tape.Program {
	t.Helper()
	g, err := graph.Build(m.Spec, graph.Options{Batch: batch, Loss: true, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(g.Params); err != nil {
		t.Fatal(err)
	}
	p, err := tape.Compile(g, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// perBatchTestLoss is the seed's test loss by its definition, one run of a
// graph of B windows per batch: the test split's whole batches in order,
// each batch's mean cross-entropy, averaged.
func perBatchTestLoss(t *testing.T, m *savedmodel.Model, data *corpus.Dataset, B int) float64 {
	t.Helper()
	p := forward(t, m, B, graph.Backend{})
	T, n := data.Context, data.TestBatches(B)
	x, y, w := make([]int, B*T), make([]int, B*T), make([]int, B)
	sum := 0.0
	for b := range n {
		for i := range w {
			w[i] = b*B + i
		}
		data.TestBatch(x, y, w)
		if err := p.Run(x, y); err != nil {
			t.Fatal(err)
		}
		sum += p.Loss()
	}
	return sum / float64(n)
}

// chunkOf is the batches per run of m's evaluation at batch B over n
// batches; the test fails unless that is more than one and leaves some
// batches for the graph at B, the case these tests are about.
func chunkOf(t *testing.T, m *savedmodel.Model, B, n int) int {
	t.Helper()
	k := m.Spec.EvalBatch(B, n) / B
	if k < 2 || n%k == 0 {
		t.Fatalf("%d batches of %d in runs of %d: pick a shape whose evaluation has a remainder", n, B, k)
	}
	return k
}

// TestChunkedTestLossIsPerBatch: the test loss gptg eval and training
// compute, several batches per run, equals the per-batch definition,
// including the batches after the last whole run, in float64 (to 1e-12)
// and float32 (to 1e-6: each run's mean is rounded to float32).
func TestChunkedTestLossIsPerBatch(t *testing.T) {
	data := tinyData(t)
	for _, tc := range []struct {
		dtype string
		tol   float64
	}{{"float64", 1e-12}, {"float32", 1e-6}} {
		t.Run(tc.dtype, func(t *testing.T) {
			m := trainDtype(t, tc.dtype, 8, 8)
			const B = 2
			n := data.TestBatches(B)
			chunkOf(t, m, B, n)
			want := perBatchTestLoss(t, m, data, B)
			got, gotN, err := eval.ModelTestLoss(m, data, B, graph.Backend{})
			if err != nil {
				t.Fatal(err)
			}
			if gotN != n {
				t.Errorf("%d batches, want %d", gotN, n)
			}
			if math.Abs(got-want) > tc.tol*want {
				t.Errorf("test loss %.15f, per batch %.15f: differ by %g", got, want, got-want)
			}
		})
	}
}

// TestChunkedRandomTestLossIsPerBatch: with train.eval_batches = n the
// chunked evaluation reads the same random windows as n runs of one batch
// (corpus.Dataset.RandomBatch, one offset per window in order) and gives
// their mean loss.
func TestChunkedRandomTestLossIsPerBatch(t *testing.T) {
	data := tinyData(t)
	m := trainDtype(t, "float64", 8, 8)
	const B, n = 2, 11
	k := chunkOf(t, m, B, n)
	g := eval.Graphs{Batch: forward(t, m, B, graph.Backend{}), Chunk: forward(t, m, k*B, graph.Backend{})}
	gotRNG, wantRNG := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
	got, err := g.RandomTestLoss(context.Background(), data, n, gotRNG)
	if err != nil {
		t.Fatal(err)
	}
	T := data.Context
	x, y, sum := make([]int, B*T), make([]int, B*T), 0.0
	for range n {
		data.RandomBatch(x, y, true, wantRNG)
		if err := g.Batch.Run(x, y); err != nil {
			t.Fatal(err)
		}
		sum += g.Batch.Loss()
	}
	want := sum / n
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("random test loss %.15f, per batch %.15f: differ by %g", got, want, got-want)
	}
	if gotRNG.Uint64() != wantRNG.Uint64() {
		t.Error("the chunked evaluation drew a different number of offsets")
	}
}

// TestChunkedTestLossSameForEveryThreadCount: a float32 model whose
// evaluation runs are large enough to be split over the threads (8 batches
// of 2 × 32 positions × embedding 128) gives the same bits on 1, 2 and 3
// threads, and the per-batch loss.
func TestChunkedTestLossSameForEveryThreadCount(t *testing.T) {
	data, err := corpus.Load(testmodel.TinyText(), "char", 32, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	m := trainDtype(t, "float32", 128, 32)
	const B = 2
	chunkOf(t, m, B, data.TestBatches(B))
	var first float64
	for _, threads := range []int{1, 2, 3} {
		got, _, err := eval.ModelTestLoss(m, data, B, graph.Backend{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		if threads == 1 {
			first = got
		} else if got != first {
			t.Errorf("%d threads: test loss %.9f, 1 thread %.9f", threads, got, first)
		}
	}
	if want := perBatchTestLoss(t, m, data, B); math.Abs(first-want) > 1e-6*want {
		t.Errorf("test loss %.9f, per batch %.9f", first, want)
	}
}
