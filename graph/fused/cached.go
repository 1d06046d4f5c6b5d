package fused

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// The fused layers of the cached graph (graph/cached.go): one position
// per run, forward only, so no backward kernels.

// embeddingAt: the row tok[token] + pos[position], one node.
func (f *Emitter) EmbeddingAt(token, position, tok, pos *G.Node) *G.Node {
	op := f.newOp("EmbeddingAt", f.dims, kernelOf(embeddingAtForward[float32], embeddingAtForward[float64]),
		[]argKind{2, 2, intVector, intVector}, tensor.Shape{1, f.dims.Width})
	return G.Must(G.ApplyOp(op, tok, pos, token, position))
}

// embeddingAtForward: x = tok[token] + pos[position]. in: tok (V, C), pos
// (context, C); ints: token, position.
func embeddingAtForward[F gemm.Float](a *args[F]) {
	tok, pos, C := a.in[0], a.in[1], a.p.Width
	id, at := a.ints[0][0], a.ints[1][0]
	tr, pr := tok[id*C:(id+1)*C], pos[at*C:(at+1)*C]
	for j := range a.out {
		a.out[j] = tr[j] + pr[j]
	}
}

// ScaledEmbeddingAt: the rows (R, C) tok[tokens[r]]·scale +
// pos[positions[r]], one node: the translation decoder's step graph, one
// position per row.
func (f *Emitter) ScaledEmbeddingAt(tokens, positions, tok, pos *G.Node, scale float64) *G.Node {
	p := f.dims
	p.Scale = scale
	op := f.newOp("ScaledEmbeddingAt", p, kernelOf(scaledEmbeddingAtForward[float32], scaledEmbeddingAtForward[float64]),
		[]argKind{2, 2, intVector, intVector}, tensor.Shape{tokens.Shape()[0], p.Width})
	return G.Must(G.ApplyOp(op, tok, pos, tokens, positions))
}

// scaledEmbeddingAtForward: x[r] = tok[tokens[r]]·scale + pos[positions[r]],
// the product rounded before the sum (as ScaledEmbedding's). in: tok
// (V, C), pos (rows, C); ints: tokens, positions.
func scaledEmbeddingAtForward[F gemm.Float](a *args[F]) {
	tok, pos, C, s := a.in[0], a.in[1], a.p.Width, F(a.p.Scale)
	for r, id := range a.ints[0] {
		at := a.ints[1][r]
		dst, tr, pr := a.out[r*C:(r+1)*C], tok[id*C:(id+1)*C], pos[at*C:(at+1)*C]
		for j := range dst {
			dst[j] = F(tr[j]*s) + pr[j] // F(…): rounded, never fused into an FMA
		}
	}
}

// cachedAttention: one node computing, per head, the new position's
// scores against the valid cached keys and its own key, their softmax and
// the weighted sum of the values. It reads the count of valid rows and
// never touches the others (the mask row is for the primitives). With a
// batch of B sequences (the translation decoder's beams), q, k, v are
// (B, C) and the caches (B·context, C), sequence after sequence.
func (f *Emitter) CachedAttention(q, k, v, keys, values, position, _ *G.Node, scale float64) *G.Node {
	p := f.dims
	p.Scale, p.Mask = scale, true
	op := f.newOp("CachedAttention", p, kernelOf(cachedAttentionForward[float32], cachedAttentionForward[float64]),
		[]argKind{2, 2, 2, 2, 2, intVector}, tensor.Shape{p.Batch, p.Width})
	return G.Must(G.ApplyOp(op, q, k, v, keys, values, position))
}

// cachedAttentionForward: for each sequence and head h, with n cached
// positions, s_j = q_h·key_j,h for j < n and s_n = q_h·k_h,
// w = softmax(s·scale), y_h = Σ_{j<n} w_j·value_j,h + w_n·v_h. in: q, k, v
// (B, C), keys, values (B·context, C); ids: n. The sums run in float64, as
// softmaxScaled's.
func cachedAttentionForward[F gemm.Float](a *args[F]) {
	C, T := a.p.Width, a.p.Context
	for b := range a.p.Batch {
		rows := [5][]F{a.in[0][b*C:], a.in[1][b*C:], a.in[2][b*C:], a.in[3][b*T*C:], a.in[4][b*T*C:]}
		cachedAttentionRow(a, rows, a.out[b*C:(b+1)*C])
	}
}

// cachedAttentionRow is cachedAttentionForward for one sequence: rows
// holds its q, k, v and its caches.
func cachedAttentionRow[F gemm.Float](a *args[F], rows [5][]F, out []F) {
	q, k, v, keys, values := rows[0], rows[1], rows[2], rows[3], rows[4]
	n, C, hs := a.ids[0], a.p.Width, a.p.Width/a.p.Heads
	if len(a.scratch) != a.p.Context+1+hs {
		a.scratch = make([]float64, a.p.Context+1+hs) // one head's scores and sums
	}
	s, sums := a.scratch[:n+1], a.scratch[a.p.Context+1:]
	for h0 := 0; h0 < C; h0 += hs {
		qh := q[h0 : h0+hs]
		for j := 0; j < n; j++ {
			s[j] = dot(qh, keys[j*C+h0:j*C+h0+hs])
		}
		s[n] = dot(qh, k[h0:h0+hs])
		softmaxScaled(s, a.p.Scale)
		acc := sums[:hs]
		for i := range acc {
			acc[i] = s[n] * float64(v[h0+i])
		}
		for j := 0; j < n; j++ {
			w, vj := s[j], values[j*C+h0:j*C+h0+hs]
			for i, x := range vj {
				acc[i] += w * float64(x)
			}
		}
		for i, x := range acc {
			out[h0+i] = F(x)
		}
	}
}

// dot is Σ a_i·b_i in float64, in four independent sums so that the
// additions need not wait for each other.
func dot[F gemm.Float](a, b []F) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}
