package train

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/eval"
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
