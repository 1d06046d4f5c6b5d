package fused

import (
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/internal/expf"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// CrossEntropy: the mean over rows of −log softmax(logits)[target], the
// targets the (rows) ids, a tensor.Int vector: SmoothedCrossEntropy's
// kernel without smoothing, every target counted.
func (f *Emitter) CrossEntropy(logits, targets *G.Node) *G.Node {
	return f.SmoothedCrossEntropy(logits, targets, 0, noIgnore)
}

// noIgnore is the ignored target id of a loss that counts every target:
// no id is negative.
const noIgnore = -1

// logSumExp of a row, shifted by its max; a float32 row is
// expf.LogSumExp's (float32 exps eight at a time, summed in float64).
func logSumExp[F gemm.Float](x []F) float64 {
	if x32, ok := any(x).([]float32); ok {
		return expf.LogSumExp(x32)
	}
	maxv := math.Inf(-1)
	for _, v := range x {
		maxv = max(maxv, float64(v)) // the builtin is inlined; math.Max is a call
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(float64(v) - maxv)
	}
	return maxv + math.Log(sum)
}
