// Package adamw is the per-entry AdamW update of package train, the loop
// that touches every parameter every step. Its square root and division
// in float64 cost ~13 cycles an entry one at a time; on amd64 with AVX2,
// float32 parameters go four at a time, with AVX-512F eight (adamw_amd64.s),
// with the same operations in the same order, so both give bit-identical weights and
// moments (TestAssemblyMatchesGo).
//
// The moments are kept in the parameters' dtype, as PyTorch keeps them:
// float32 moments take 8 bytes a parameter where float64 ones took 16
// (2 GB at GPT-2 124M). Each update is still computed in float64 — every
// float32 operand widens exactly, and only the stored moments and weight
// are rounded — so the step is the correctly rounded result of the
// formula on the stored values, one rounding per stored value rather than
// PyTorch's one per operation, and float64 parameters keep the exact
// arithmetic (and bits) of the float64 golden runs. SumSquares, gradient clipping's pass
// over every gradient entry before the update, is here for the same reason.
package adamw

// Coefs are one step's constants: PyTorch's AdamW with t = step + 1 is, for
// every parameter p, its gradient g and moments m, v,
//
//	m ← β1·m + (1 − β1)·g
//	v ← β2·v + (1 − β2)·g²
//	p ← p·Decay − StepSize·m / (√v·InvSqrtBias2 + Eps)
//
// with Decay = 1 − lr·wd, StepSize = lr/(1 − β1ᵗ), InvSqrtBias2 = 1/√(1 − β2ᵗ).
type Coefs struct {
	Beta1, Beta2, Eps             float64
	Decay, StepSize, InvSqrtBias2 float64
}

// Update applies one step to the parameters w with gradients g and moments
// m, v, all of the same length and dtype.
func Update[F float32 | float64](w, g, m, v []F, c Coefs) {
	n := len(w)
	g, m, v = g[:n], m[:n], v[:n]
	i := 0
	if w32, ok := any(w).([]float32); ok && haveAsm && n >= 4 {
		g32, m32, v32 := any(g).([]float32), any(m).([]float32), any(v).([]float32)
		if have512 && n >= 8 {
			i = n &^ 7
			update32AVX512(&w32[0], &g32[0], &m32[0], &v32[0], i, &c)
		}
		if k := (n - i) &^ 3; k > 0 {
			update32AVX2(&w32[i], &g32[i], &m32[i], &v32[i], k, &c)
			i += k
		}
	}
	update(w[i:], g[i:], m[i:], v[i:], &c)
}

// update is the plain loop. The explicit float64(…) conversions round each
// product before the sum, as the assembly does: without them the compiler
// may fuse a multiply and an add into one FMA (GOAMD64=v3), which rounds
// once, and the two paths would drift apart by an ulp now and then. The
// weight's update uses the moments before they are rounded to F for
// storage, as the assembly does (it has them in float64 registers).
func update[F float32 | float64](w, g, m, v []F, c *Coefs) {
	n := len(w)
	g, m, v = g[:n], m[:n], v[:n]
	c1, c2 := 1-c.Beta1, 1-c.Beta2
	for j := range w {
		gj := float64(g[j])
		mj := float64(c.Beta1*float64(m[j])) + float64(c1*gj)
		vj := float64(c.Beta2*float64(v[j])) + float64(c2*gj*gj)
		m[j], v[j] = F(mj), F(vj)
		denom := float64(sqrt(vj)*c.InvSqrtBias2) + c.Eps
		w[j] = F(float64(float64(w[j])*c.Decay) - float64(c.StepSize*mj)/denom)
	}
}
