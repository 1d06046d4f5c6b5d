package graph

import (
	"math"

	"github.com/gptg/gptg/graph/internal/gelu"
	"github.com/gptg/gptg/graph/internal/gemm"
)

// The kernels of the fused ops, forward and backward, llm.c style: one
// plain loop nest per op over row-major slices, the matrix products handed
// to gemm.Mul (and float32 GELU to package gelu: Go does not vectorise, and
// these two would otherwise cost most of a step). a.in holds the inputs in the order the op's node takes
// them; every kernel overwrites all of a.out. Activations are (rows, width)
// matrices, rows = B·T; attention weights are (B·H, T, T); head h of a row
// is its columns h·hs … h·hs+hs−1 (hs = C/H), so heads are never split
// into copies.

// embedForward: x[r] = tok[ids[r]] + pos[r mod T]. in: tok (V, C), pos (Context, C).
func embedForward[F gemm.Float](a *args[F]) {
	tok, pos, C, T := a.in[0], a.in[1], a.p.Width, a.p.Seq
	for r, id := range a.ids {
		t := r % T
		dst, tr, pr := a.out[r*C:(r+1)*C], tok[id*C:(id+1)*C], pos[t*C:(t+1)*C]
		for j := range dst {
			dst[j] = tr[j] + pr[j]
		}
	}
}

// embedTokGrad: ∂tok[v] = Σ over rows r with ids[r] = v of dy[r]. in: dy.
func embedTokGrad[F gemm.Float](a *args[F]) {
	dy, C := a.in[0], a.p.Width
	clear(a.out)
	for r, id := range a.ids {
		addTo(a.out[id*C:(id+1)*C], dy[r*C:(r+1)*C])
	}
}

// embedPosGrad: ∂pos[t] = Σ_b dy[b·T + t]; rows past T (a short graph) get 0. in: dy.
func embedPosGrad[F gemm.Float](a *args[F]) {
	dy, C, T := a.in[0], a.p.Width, a.p.Seq
	clear(a.out)
	for r := 0; r < a.p.Rows; r++ {
		t := r % T
		addTo(a.out[t*C:(t+1)*C], dy[r*C:(r+1)*C])
	}
}

// linearForward: y = x·Wᵀ + b. in: x (rows, In), W (Out, In), b (Out).
// Wᵀ is never formed: the product reads W's rows as columns.
func linearForward[F gemm.Float](a *args[F]) {
	x, w, bias, n, in, out := a.in[0], a.in[1], a.in[2], a.p.Rows, a.p.In, a.p.Out
	for i := 0; i < n; i++ {
		copy(a.out[i*out:(i+1)*out], bias)
	}
	gemm.Mul(a.ws, false, true, n, out, in, x, in, w, in, a.out, out, true)
}

// linearGradX: ∂x = dy·W. in: dy (rows, Out), W (Out, In).
func linearGradX[F gemm.Float](a *args[F]) {
	dy, w, n, in, out := a.in[0], a.in[1], a.p.Rows, a.p.In, a.p.Out
	gemm.Mul(a.ws, false, false, n, in, out, dy, out, w, in, a.out, in, false)
}

// linearGradW: ∂W = dyᵀ·x. in: dy (rows, Out), x (rows, In).
func linearGradW[F gemm.Float](a *args[F]) {
	dy, x, n, in, out := a.in[0], a.in[1], a.p.Rows, a.p.In, a.p.Out
	gemm.Mul(a.ws, true, false, out, in, n, dy, out, x, in, a.out, in, false)
}

// columnSum: ∂b = Σ_rows dy, the gradient of a bias added to every row. in: dy.
func columnSum[F gemm.Float](a *args[F]) {
	dy, w := a.in[0], len(a.out)
	gemm.SumRows(a.ws, len(dy)/w, w, dy, w, a.out)
}

// eachHead calls f for every head h of every sequence b of a batch.
func eachHead(p *opParams, f func(b, h int)) {
	for b := 0; b < p.Batch; b++ {
		for h := 0; h < p.Heads; h++ {
			f(b, h)
		}
	}
}

// head returns rows (B·T, C) from the first element of sequence b's head h
// on; the head's rows are C apart, the stride to give gemm.Mul.
func head[F gemm.Float](x []F, p *opParams, b, h int) []F {
	return x[b*p.Seq*p.Width+h*(p.Width/p.Heads):]
}

// attnWeights: w = softmax(q·kᵀ·scale + mask) per sequence and head.
// in: q, k (rows, C). Out: (B·H, T, T). A masked score is never computed
// into the sum: exp(−1e9 − max) of the composed graph is exactly 0 too.
func attnWeights[F gemm.Float](a *args[F]) {
	q, k, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	for b := 0; b < p.Batch; b++ {
		for h := 0; h < p.Heads; h++ {
			w := a.out[(b*p.Heads+h)*T*T : (b*p.Heads+h+1)*T*T]
			gemm.Mul(a.ws, false, true, T, T, hs, head(q, p, b, h), C, head(k, p, b, h), C, w, T, false)
			for i := 0; i < T; i++ {
				row := w[i*T : (i+1)*T]
				n := T
				if p.Mask {
					n = i + 1
				}
				softmaxScaled(row[:n], p.Scale)
				clear(row[n:])
			}
		}
	}
}

// softmaxScaled replaces the raw scores s by softmax(s·scale), shifted by
// the row max first (scale > 0, so the max of s is the max of s·scale).
func softmaxScaled[F gemm.Float](s []F, scale float64) {
	maxv := math.Inf(-1)
	for _, v := range s {
		maxv = max(maxv, float64(v))
	}
	sum := 0.0
	for i, v := range s {
		e := math.Exp((float64(v) - maxv) * scale)
		s[i] = F(e)
		sum += e
	}
	for i, v := range s {
		s[i] = F(float64(v) / sum)
	}
}

// attnMix: y = w·v per sequence and head, heads side by side in y's rows.
// in: w (B·H, T, T), v (rows, C).
func attnMix[F gemm.Float](a *args[F]) {
	w, v, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		wh := w[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, false, false, T, hs, T, wh, T, head(v, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// attnMixGradW: ∂w = dy·vᵀ per sequence and head. in: dy (rows, C), v (rows, C).
func attnMixGradW[F gemm.Float](a *args[F]) {
	dy, v, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		dw := a.out[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, false, true, T, T, hs, head(dy, p, b, h), C, head(v, p, b, h), C, dw, T, false)
	})
}

// attnMixGradV: ∂v = wᵀ·dy per sequence and head. in: w (B·H, T, T), dy (rows, C).
func attnMixGradV[F gemm.Float](a *args[F]) {
	w, dy, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		wh := w[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, true, false, T, hs, T, wh, T, head(dy, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// attnScoreGrad is the softmax backward, times the scale: the gradient of
// the raw scores q·kᵀ. ∂s_ij = scale·w_ij·(∂w_ij − Σ_k w_ik·∂w_ik).
// in: w, ∂w (B·H, T, T). Masked entries have w = 0 and so ∂s = 0.
func attnScoreGrad[F gemm.Float](a *args[F]) {
	w, dw, T, scale := a.in[0], a.in[1], a.p.Seq, a.p.Scale
	for r := 0; r+T <= len(w); r += T {
		wr, dr, out := w[r:r+T], dw[r:r+T], a.out[r:r+T]
		dot := 0.0
		for j, v := range wr {
			dot += float64(v) * float64(dr[j])
		}
		for j, v := range wr {
			out[j] = F(scale * float64(v) * (float64(dr[j]) - dot))
		}
	}
}

// attnQGrad: ∂q = ∂s·k per sequence and head. in: ∂s (B·H, T, T), k (rows, C).
func attnQGrad[F gemm.Float](a *args[F]) {
	ds, k, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		dh := ds[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, false, false, T, hs, T, dh, T, head(k, p, b, h), C, head(a.out, p, b, h), C, false)
	})
}

// attnKGrad: ∂k = ∂sᵀ·q per sequence and head. in: ∂s (B·H, T, T), q (rows, C).
func attnKGrad[F gemm.Float](a *args[F]) {
	ds, q, p := a.in[0], a.in[1], a.p
	T, C, hs := p.Seq, p.Width, p.Width/p.Heads
	eachHead(p, func(b, h int) {
		dh := ds[(b*p.Heads+h)*T*T:]
		gemm.Mul(a.ws, true, false, T, hs, T, dh, T, head(q, p, b, h), C, head(a.out, p, b, h), C, false)
	})
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

// layerNormForward: y = (x − mean)/std·w + b per row. in: x (rows, C), w, b (C).
func layerNormForward[F gemm.Float](a *args[F]) {
	x, w, bias, C := a.in[0], a.in[1], a.in[2], a.p.Width
	for r := 0; r < a.p.Rows; r++ {
		xr, yr := x[r*C:(r+1)*C], a.out[r*C:(r+1)*C]
		mean, std := rowStats(xr, a.p.Eps)
		for j, v := range xr {
			yr[j] = F((float64(v)-mean)/std*float64(w[j]) + float64(bias[j]))
		}
	}
}

// layerNormGradX: with n = (x − mean)/std and g = dy⊙w,
// ∂x = (g − mean(g) − n·mean(g⊙n))/std. in: x, w, dy.
func layerNormGradX[F gemm.Float](a *args[F]) {
	x, w, dy, C := a.in[0], a.in[1], a.in[2], a.p.Width
	for r := 0; r < a.p.Rows; r++ {
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
}

// layerNormGradW: ∂w = Σ_rows dy⊙(x − mean)/std. in: x, dy.
func layerNormGradW[F gemm.Float](a *args[F]) {
	x, dy, C := a.in[0], a.in[1], a.p.Width
	clear(a.out)
	for r := 0; r < a.p.Rows; r++ {
		xr, dr := x[r*C:(r+1)*C], dy[r*C:(r+1)*C]
		mean, std := rowStats(xr, a.p.Eps)
		for j, v := range xr {
			a.out[j] += F(float64(dr[j]) * (float64(v) - mean) / std)
		}
	}
}

// GELU in its tanh form: gelu(x) = ½x(1 + tanh(c(x + 0.044715x³))), c = √(2/π).
const (
	geluA = 0.044715
	geluC = 0.7978845608028654 // √(2/π)
)

func geluForward64(a *args[float64]) {
	for i, x := range a.in[0] {
		a.out[i] = 0.5 * x * (1 + math.Tanh(geluC*(x+geluA*x*x*x)))
	}
}

// geluGrad64: ∂x = dy·(½(1 + t) + ½x(1 − t²)·c(1 + 3·0.044715x²)), t the tanh above. in: x, dy.
func geluGrad64(a *args[float64]) {
	dy := a.in[1]
	for i, x := range a.in[0] {
		t := math.Tanh(geluC * (x + geluA*x*x*x))
		a.out[i] = dy[i] * (0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*geluA*x*x))
	}
}

// The float32 GELU runs eight elements at a time (package gelu): one
// element at a time it costs more than all the matrix products.
func geluForward32(a *args[float32]) { gelu.Forward(a.out, a.in[0]) }
func geluGrad32(a *args[float32])    { gelu.Backward(a.out, a.in[0], a.in[1]) }

func reluForward[F gemm.Float](a *args[F]) {
	for i, v := range a.in[0] {
		a.out[i] = max(v, 0)
	}
}

// reluGrad passes dy where x > 0 (0 at x = 0, as PyTorch). in: x, dy.
func reluGrad[F gemm.Float](a *args[F]) {
	dy := a.in[1]
	for i, v := range a.in[0] {
		if v > 0 {
			a.out[i] = dy[i]
		} else {
			a.out[i] = 0
		}
	}
}

// logSumExp of a row, shifted by its max.
func logSumExp[F gemm.Float](x []F) float64 {
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

// crossEntropy: loss = −(1/rows) Σ_ij t_ij·log softmax(x_i)_j, the mean over
// rows of the cross-entropy against target rows t (one-hot: −log p of the
// target). in: logits, targets (rows, V). Out: a scalar.
func crossEntropy[F gemm.Float](a *args[F]) {
	x, tgt, V, n := a.in[0], a.in[1], a.p.Vocab, a.p.Rows
	total := 0.0
	for r := 0; r < n; r++ {
		xr, tr := x[r*V:(r+1)*V], tgt[r*V:(r+1)*V]
		lse := logSumExp(xr)
		for j, t := range tr {
			if t != 0 {
				total += float64(t) * (float64(xr[j]) - lse)
			}
		}
	}
	a.out[0] = F(-total / float64(n))
}

// crossEntropyGrad: ∂x_ij = g/rows·(p_ij·Σ_k t_ik − t_ij), p = softmax(x_i),
// g the loss's incoming gradient. in: logits, targets, g (scalar).
func crossEntropyGrad[F gemm.Float](a *args[F]) {
	x, tgt, V, n := a.in[0], a.in[1], a.p.Vocab, a.p.Rows
	g := float64(a.in[2][0]) / float64(n)
	for r := 0; r < n; r++ {
		xr, tr, out := x[r*V:(r+1)*V], tgt[r*V:(r+1)*V], a.out[r*V:(r+1)*V]
		lse := logSumExp(xr)
		tsum := 0.0
		for _, t := range tr {
			tsum += float64(t)
		}
		for j, v := range xr {
			out[j] = F(g * (math.Exp(float64(v)-lse)*tsum - float64(tr[j])))
		}
	}
}

// addTo adds src to dst element by element.
func addTo[F gemm.Float](dst, src []F) {
	src = src[:len(dst)]
	for j, v := range src {
		dst[j] += v
	}
}
