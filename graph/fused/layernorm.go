package fused

import (
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/internal/gemm"
	"github.com/gptg/gptg/graph/internal/layernorm"
)

// layerNorm: (x − mean)/√(var + eps)·w + b per row; without a bias (nil)
// the op has two inputs and stops at ·w.
func (f *Emitter) LayerNorm(x, w, bias *G.Node, eps float64) *G.Node {
	p := f.dims
	p.Eps = eps
	if bias == nil {
		op := f.newOp("LayerNormNoBias", p, kernelOf(layerNormForward[float32], layerNormForward[float64]),
			rank(2, 1), x.Shape().Clone(), true, true)
		op.grad, op.stats = layerNormGrad, new([]float64)
		return G.Must(G.ApplyOp(op, x, w))
	}
	op := f.newOp("LayerNorm", p, kernelOf(layerNormForward[float32], layerNormForward[float64]),
		rank(2, 1, 1), x.Shape().Clone(), true, true, true)
	op.grad, op.stats = layerNormGrad, new([]float64)
	return G.Must(G.ApplyOp(op, x, w, bias))
}

// layerNormGrad emits ∂x, ∂w and, when the op has a bias, ∂b.
func layerNormGrad(op *fusedOp, in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
	x, w := in[0], in[1]
	dx, err := op.derive("LayerNormGradX", kernelOf(layerNormBackwardX[float32], layerNormBackwardX[float64]),
		rank(2, 1, 2), x.Shape().Clone(), x, w, dy)
	if err != nil {
		return nil, err
	}
	dw, err := op.derive("LayerNormGradW", kernelOf(layerNormBackwardW[float32], layerNormBackwardW[float64]),
		rank(2, 2), w.Shape().Clone(), x, dy)
	if err != nil {
		return nil, err
	}
	if len(in) == 2 {
		return G.Nodes{dx, dw}, nil
	}
	db, err := op.biasGrad(in[2], dy)
	return G.Nodes{dx, dw, db}, err
}

// The row kernels below are the float64 path; a float32 graph takes
// package layernorm's, eight elements at a time (in float64 arithmetic too,
// its sums in eight fixed partial sums).

// rowStats returns a row's mean and 1/√(var + eps), the variance biased
// as nn.LayerNorm's.
//
// Both sums run in four interleaved partial sums: one running sum waits
// for each addition to finish (four cycles) before the next can start,
// four keep the adder busy. The order is fixed, so the bits are too.
func rowStats[F gemm.Float](x []F, eps float64) (mean, rstd float64) {
	if x32, ok := any(x).([]float32); ok {
		return layernorm.RowStats(x32, eps)
	}
	var s [4]float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s[0] += float64(x[j])
		s[1] += float64(x[j+1])
		s[2] += float64(x[j+2])
		s[3] += float64(x[j+3])
	}
	for ; j < len(x); j++ {
		s[0] += float64(x[j])
	}
	mean = (s[0] + s[1] + s[2] + s[3]) / float64(len(x))
	s = [4]float64{}
	j = 0
	for ; j+4 <= len(x); j += 4 {
		d0, d1, d2, d3 := float64(x[j])-mean, float64(x[j+1])-mean, float64(x[j+2])-mean, float64(x[j+3])-mean
		s[0] += d0 * d0
		s[1] += d1 * d1
		s[2] += d2 * d2
		s[3] += d3 * d3
	}
	for ; j < len(x); j++ {
		d := float64(x[j]) - mean
		s[0] += d * d
	}
	variance := (s[0] + s[1] + s[2] + s[3]) / float64(len(x))
	return mean, 1 / math.Sqrt(variance+eps)
}

// normalizeRow sets y = (x − mean)·rstd·w + b; without a bias (nil) it
// stops at ·w.
func normalizeRow[F gemm.Float](y, x, w, bias []F, mean, rstd float64) {
	if y32, ok := any(y).([]float32); ok {
		layernorm.Normalize(y32, any(x).([]float32), any(w).([]float32), any(bias).([]float32), mean, rstd)
		return
	}
	if bias == nil {
		for j, v := range x {
			y[j] = F((float64(v) - mean) * rstd * float64(w[j]))
		}
		return
	}
	for j, v := range x {
		y[j] = F((float64(v)-mean)*rstd*float64(w[j]) + float64(bias[j]))
	}
}

// layerNormForward: y = (x − mean)/std·w + b per row. in: x (rows, C), w,
// and b (C) if the layer has one. Each row's mean and 1/std stay in
// a.stats for the backward kernels, which would otherwise compute them
// twice more.
func layerNormForward[F gemm.Float](a *args[F]) {
	x, w, C := a.in[0], a.in[1], a.p.Width
	var bias []F // nil: the layer has none
	if len(a.in) > 2 {
		bias = a.in[2]
	}
	if len(*a.stats) != 2*a.p.Rows {
		*a.stats = make([]float64, 2*a.p.Rows)
	}
	stats := *a.stats
	rows(a, a.p.Rows, 4*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*C:(r+1)*C], a.out[r*C:(r+1)*C]
			mean, rstd := rowStats(xr, a.p.Eps)
			stats[2*r], stats[2*r+1] = mean, rstd
			normalizeRow(yr, xr, w, bias, mean, rstd)
		}
	})
}

// layerNormBackwardX: with n = (x − mean)/std and g = dy⊙w,
// ∂x = (g − mean(g) − n·mean(g⊙n))/std. in: x, w, dy; the forward
// kernel's statistics.
func layerNormBackwardX[F gemm.Float](a *args[F]) {
	x, w, dy, C, stats := a.in[0], a.in[1], a.in[2], a.p.Width, *a.stats
	rows(a, a.p.Rows, 5*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dr, out := x[r*C:(r+1)*C], dy[r*C:(r+1)*C], a.out[r*C:(r+1)*C]
			mean, rstd := stats[2*r], stats[2*r+1]
			if out32, ok := any(out).([]float32); ok {
				layernorm.BackwardX(out32, any(xr).([]float32), any(w).([]float32), any(dr).([]float32), mean, rstd)
				continue
			}
			sumG, sumGN := 0.0, 0.0
			for j, v := range xr {
				g := float64(dr[j]) * float64(w[j])
				sumG += g
				sumGN += g * (float64(v) - mean) * rstd
			}
			mg, mgn := sumG/float64(C), sumGN/float64(C)
			for j, v := range xr {
				n := (float64(v) - mean) * rstd
				out[j] = F((float64(dr[j])*float64(w[j]) - mg - n*mgn) * rstd)
			}
		}
	})
}

// layerNormBackwardW: ∂w = Σ_rows dy⊙(x − mean)/std. in: x, dy; the
// forward kernel's statistics. A sum over rows: the team splits the
// columns, so that each sum still runs over the rows in order.
func layerNormBackwardW[F gemm.Float](a *args[F]) {
	x, dy, C, stats := a.in[0], a.in[1], a.p.Width, *a.stats
	clear(a.out)
	rows(a, C, 2*len(x), func(lo, hi int) {
		for r := 0; r < a.p.Rows; r++ {
			xr, dr, out := x[r*C+lo:r*C+hi], dy[r*C+lo:r*C+hi], a.out[lo:hi]
			mean, rstd := stats[2*r], stats[2*r+1]
			if out32, ok := any(out).([]float32); ok {
				layernorm.AccumulateW(out32, any(xr).([]float32), any(dr).([]float32), mean, rstd)
				continue
			}
			for j, v := range xr {
				out[j] += F(float64(dr[j]) * (float64(v) - mean) * rstd)
			}
		}
	})
}
