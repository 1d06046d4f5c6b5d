package train

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
)

// TestRunEvaluatesPerBatch: a training run's test loss, computed several
// batches per run (eval.Graphs), equals the per-batch definition on its
// own graph at the training batch: over the whole test split, and with
// train.eval_batches = 11 over the same random windows as 11 runs of one
// batch drawn from (seed, step), as before chunks. Both cases leave
// batches after the last whole chunk.
func TestRunEvaluatesPerBatch(t *testing.T) {
	for _, evalBatches := range []int{0, 11} {
		c := tinyConfig(t, t.TempDir())
		c.Train.EvalBatches = evalBatches
		tr, err := newTrainer(context.Background(), c, c.Data.Path, c.Data.ValPath, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.close()
		B, n := c.Train.Batch, tr.testBatches()
		if tr.tests.Chunk == nil || n%(tr.tests.Chunk.Batch/B) == 0 {
			t.Fatalf("eval_batches %d: no chunk graph, or no batches after the last chunk (%d batches of %d)", evalBatches, n, B)
		}
		tr.step = 7
		got, gotN, err := tr.testLoss(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var want float64
		if evalBatches == 0 {
			want, _, err = eval.TestLoss(tr.tests.Batch, tr.data)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			rng := rand.New(rand.NewPCG(uint64(c.Train.Seed)^saltEvalBatches, 7))
			T := c.Model.Context
			x, y, sum := make([]int, B*T), make([]int, B*T), 0.0
			for range evalBatches {
				tr.data.RandomBatch(x, y, true, rng)
				if err := tr.tests.Batch.Run(x, y); err != nil {
					t.Fatal(err)
				}
				sum += tr.tests.Batch.Loss()
			}
			want = sum / float64(evalBatches)
		}
		if gotN != n || math.Abs(got-want) > 1e-12*want {
			t.Errorf("eval_batches %d: test loss %.15f over %d batches, per batch %.15f over %d", evalBatches, got, gotN, want, n)
		}
	}
}

// TestShardedRunEvaluatesInParts: a run whose step splits its batch over
// two shards evaluates at the shard's size, two runs per batch
// (eval.Graphs.Parts), and gets the test loss of a graph of the whole
// batch: over the test split, and over train.eval_batches random batches
// drawn as TestRunEvaluatesPerBatch draws them (3: a chunk of two, then
// one batch in parts). To 1e-12 in float64; in float32 to 1e-6, each
// part's mean rounded to float32 where the whole batch's is.
func TestShardedRunEvaluatesInParts(t *testing.T) {
	for _, dtype := range []string{"float64", "float32"} {
		for _, evalBatches := range []int{0, 3} {
			c := tinyConfig(t, t.TempDir())
			c.Model.Context, c.Model.Embedding, c.Model.Dtype = 32, 128, dtype
			c.Data.Stride = 16
			c.Train.Batch, c.Train.EvalBatches = 16, evalBatches
			tr, err := newTrainer(context.Background(), c, c.Data.Path, c.Data.ValPath, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.close()
			B, T := c.Train.Batch, c.Model.Context
			if tr.prog.Shards() != 2 || tr.tests.Parts != 2 || tr.tests.Batch.Batch != B/2 {
				t.Fatalf("%d shards, evaluation in %d parts of %d windows: want 2 of %d", tr.prog.Shards(), tr.tests.Parts, tr.tests.Batch.Batch, B/2)
			}
			whole, err := tr.evalGraph(B, fused.NewMemory(), threads(graph.Backend{}, c.Train))
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Close()
			tr.step = 5
			got, _, err := tr.testLoss(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var want float64
			if evalBatches == 0 {
				if tr.tests.Chunk != nil {
					// The chunk would cover the split: check the parts alone.
					tr.tests.Chunk.Close()
					tr.tests.Chunk = nil
					if got, _, err = tr.testLoss(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				if want, _, err = eval.TestLoss(whole, tr.data); err != nil {
					t.Fatal(err)
				}
			} else {
				if tr.tests.Chunk == nil || evalBatches%(tr.tests.Chunk.Batch/B) == 0 {
					t.Fatalf("no chunk graph, or no batch after the last chunk (%d batches of %d)", evalBatches, B)
				}
				rng := rand.New(rand.NewPCG(uint64(c.Train.Seed)^saltEvalBatches, 5))
				x, y, sum := make([]int, B*T), make([]int, B*T), 0.0
				for range evalBatches {
					tr.data.RandomBatch(x, y, true, rng)
					if err := whole.Run(x, y); err != nil {
						t.Fatal(err)
					}
					sum += whole.Loss()
				}
				want = sum / float64(evalBatches)
			}
			tol := 1e-12
			if dtype == "float32" {
				tol = 1e-6
			}
			if math.Abs(got-want) > tol*want {
				t.Errorf("%s, eval_batches %d: test loss %.15f in parts, %.15f in whole batches", dtype, evalBatches, got, want)
			}
		}
	}
}
