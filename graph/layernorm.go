package graph

import (
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// layerNorm: (x − mean)/√(var + eps)·w + b per row; without a bias (nil)
// the op has two inputs and stops at ·w.
func (f *fused) layerNorm(x, w, bias *G.Node, eps float64) *G.Node {
	p := f.dims
	p.Eps = eps
	if bias == nil {
		op := f.newOp("LayerNormNoBias", p, kernelOf(layerNormForward[float32], layerNormForward[float64]),
			rank(2, 1), x.Shape().Clone(), true, true)
		op.grad = layerNormGrad
		return G.Must(G.ApplyOp(op, x, w))
	}
	op := f.newOp("LayerNorm", p, kernelOf(layerNormForward[float32], layerNormForward[float64]),
		rank(2, 1, 1), x.Shape().Clone(), true, true, true)
	op.grad = layerNormGrad
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

// rowStats returns a row's mean and its standard deviation √(var + eps),
// the variance biased as nn.LayerNorm's.
func rowStats[F gemm.Float](x []F, eps float64) (mean, std float64) {
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	variance := 0.0
	for _, v := range x {
		d := float64(v) - mean
		variance += d * d
	}
	variance /= float64(len(x))
	return mean, math.Sqrt(variance + eps)
}

// layerNormForward: y = (x − mean)/std·w + b per row. in: x (rows, C), w,
// and b (C) if the layer has one.
func layerNormForward[F gemm.Float](a *args[F]) {
	x, w, C := a.in[0], a.in[1], a.p.Width
	var bias []F // nil: the layer has none
	if len(a.in) > 2 {
		bias = a.in[2]
	}
	rows(a, a.p.Rows, 4*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*C:(r+1)*C], a.out[r*C:(r+1)*C]
			mean, std := rowStats(xr, a.p.Eps)
			if bias == nil {
				for j, v := range xr {
					yr[j] = F((float64(v) - mean) / std * float64(w[j]))
				}
				continue
			}
			for j, v := range xr {
				yr[j] = F((float64(v)-mean)/std*float64(w[j]) + float64(bias[j]))
			}
		}
	})
}

// layerNormBackwardX: with n = (x − mean)/std and g = dy⊙w,
// ∂x = (g − mean(g) − n·mean(g⊙n))/std. in: x, w, dy.
func layerNormBackwardX[F gemm.Float](a *args[F]) {
	x, w, dy, C := a.in[0], a.in[1], a.in[2], a.p.Width
	rows(a, a.p.Rows, 6*len(x), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dr, out := x[r*C:(r+1)*C], dy[r*C:(r+1)*C], a.out[r*C:(r+1)*C]
			mean, std := rowStats(xr, a.p.Eps)
			sumG, sumGN := 0.0, 0.0
			for j, v := range xr {
				g := float64(dr[j]) * float64(w[j])
				sumG += g
				sumGN += g * (float64(v) - mean) / std
			}
			mg, mgn := sumG/float64(C), sumGN/float64(C)
			for j, v := range xr {
				n := (float64(v) - mean) / std
				out[j] = F((float64(dr[j])*float64(w[j]) - mg - n*mgn) / std)
			}
		}
	})
}

// layerNormBackwardW: ∂w = Σ_rows dy⊙(x − mean)/std. in: x, dy.
// A sum over rows: the team splits the columns, and each worker computes
// every row's mean and std for itself (cheap next to the sum).
func layerNormBackwardW[F gemm.Float](a *args[F]) {
	x, dy, C := a.in[0], a.in[1], a.p.Width
	clear(a.out)
	rows(a, C, 4*len(x), func(lo, hi int) {
		for r := 0; r < a.p.Rows; r++ {
			xr, dr := x[r*C:(r+1)*C], dy[r*C:(r+1)*C]
			mean, std := rowStats(xr, a.p.Eps)
			for j := lo; j < hi; j++ {
				a.out[j] += F(float64(dr[j]) * (float64(xr[j]) - mean) / std)
			}
		}
	})
}
