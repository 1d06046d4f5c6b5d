package train

import (
	"context"
	"reflect"
	"testing"

	"github.com/gptg/gptg/graph/fused"
)

// TestGradientLoansEndAfterTheyAreRead: a training step gives its
// gradients' buffers back (tape.Program.ReleaseGrads) after it has folded
// them into the sums of its batches, and after the update has read the
// last; given back, a buffer is filled with NaN (fused.FillGivenBack), so a
// step that read one later would train other weights or diverge. Two
// shards (batch 16), grad_accum 1, 2 and 3: the weights and metrics are
// those of the runs whose given-back buffers keep their values.
func TestGradientLoansEndAfterTheyAreRead(t *testing.T) {
	train := func(accum int, fill bool) (map[string]any, []map[string]any) {
		if fill {
			defer fused.FillGivenBack()()
		}
		dir := t.TempDir()
		c := tinyConfig(t, dir)
		c.Model.Context, c.Model.Embedding, c.Model.Dtype, c.Model.Dropout = 32, 128, "float32", 0.1
		c.Data.Stride = 16
		c.Train.Batch, c.Train.GradAccum, c.Train.MaxSteps, c.Train.EvalEvery = 16, accum, 4, 2
		c.Train.Threads = 2
		if _, err := Run(context.Background(), c, Options{}); err != nil {
			t.Fatalf("grad_accum %d, NaN given back %v: %v", accum, fill, err)
		}
		got := map[string]any{}
		for k, v := range params(t, dir) {
			got[k] = v
		}
		return got, rows(t, dir)
	}
	for _, accum := range []int{1, 2, 3} {
		want, wantRows := train(accum, false)
		got, gotRows := train(accum, true)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("grad_accum %d: the weights differ when given-back buffers read NaN", accum)
		}
		if !reflect.DeepEqual(gotRows, wantRows) {
			t.Errorf("grad_accum %d: the metrics differ when given-back buffers read NaN:\n%v\n%v", accum, gotRows, wantRows)
		}
	}
}
