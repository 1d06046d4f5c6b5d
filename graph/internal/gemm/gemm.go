// Package gemm multiplies small row-major matrices for the fused graph ops:
// C = op(A)·op(B) or C += op(A)·op(B), with op(X) = X or Xᵀ.
//
// The products of the seed model are tiny (128×64 by 64×256 at most), so
// the work is organised the way BLAS libraries do it, minus the levels of
// cache blocking that only pay for big matrices: op(B) is copied once into
// panels of nr columns, op(A) into strips of mr rows, and a micro-kernel
// computes one mr×nr tile of C from a strip and a panel, keeping the whole
// tile in registers. On amd64 with AVX2 and FMA the micro-kernels are a few
// lines of assembly (kernel_amd64.s); everywhere else, and with the build
// tag purego, they are the plain loops of kernel.go, which compute the same
// sums in the same order.
//
// Plain Go loops reach 4–5 GFLOP/s here (Go does not vectorise), gonum's
// pure-Go Sgemm 11–16, the assembly tile 30–45: the difference between
// gptg being slower or faster than PyTorch on the seed config.
package gemm

// Float is the element type of a product.
type Float interface{ float32 | float64 }

// mr is the number of rows of a micro-kernel tile for both element types;
// its columns, nr, are two 256-bit registers: 16 float32 or 8 float64.
const (
	mr   = 4
	nr32 = 16
	nr64 = 8
)

// Workspace holds the packing buffers of one goroutine's products, so a
// product allocates nothing once the buffers have grown to the largest
// size asked of them. A Workspace must not be used by two goroutines at once.
type Workspace struct {
	a32, b32, ones32 []float32
	a64, b64, ones64 []float64
	t32              [mr * nr32]float32
	t64              [mr * nr64]float64
}

// Mul computes C = op(A)·op(B), or C += op(A)·op(B) when accumulate is set,
// where op(A) is m×k and op(B) is k×n, all row-major: element (i, p) of
// op(A) is a[i*lda+p], or a[p*lda+i] when transA is set (A stored k×m), and
// likewise for B; element (i, j) of C is c[i*ldc+j].
//
// The micro-kernel reads A where it lies, through two strides, and B
// where its rows are contiguous (transB unset); only Bᵀ and the edge
// tiles past the last whole strip or panel are packed (copied, zero-padded).
func Mul[F Float](w *Workspace, transA, transB bool, m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int, accumulate bool) {
	if m <= 0 || n <= 0 {
		return
	}
	if k <= 0 {
		if !accumulate {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	nr := nrOf[F]()
	ap, bp, tile := buffers[F](w)
	panels := (n + nr - 1) / nr
	full := n / nr // panels of nr columns that exist
	if transB {
		*bp = grow(*bp, panels*nr*k)
		packB(*bp, true, 0, n, k, b, ldb, nr)
	} else if full < panels {
		*bp = grow(*bp, nr*k)
		packB(*bp, false, full*nr, n, k, b, ldb, nr)
	}
	*ap = grow(*ap, mr*k)
	for i0 := 0; i0 < m; i0 += mr {
		rows := min(mr, m-i0)
		// Element (i0+r, p) of op(A) is as[r*aRow + p*aStep].
		var as []F
		var aRow, aStep int
		switch {
		case rows < mr:
			packA(*ap, transA, i0, rows, k, a, lda)
			as, aRow, aStep = *ap, 1, mr
		case transA:
			as, aRow, aStep = a[i0:], 1, lda
		default:
			as, aRow, aStep = a[i0*lda:], lda, 1
		}
		for jp := 0; jp < panels; jp++ {
			j0 := jp * nr
			cols := min(nr, n-j0)
			// Element (p, j0+j) of op(B) is bs[p*bStep + j].
			var bs []F
			bStep := nr
			switch {
			case transB:
				bs = (*bp)[jp*nr*k:]
			case jp < full:
				bs, bStep = b[j0:], ldb
			default:
				bs = *bp
			}
			if rows == mr && cols == nr {
				kernel(k, as, aRow, aStep, bs, bStep, c[i0*ldc+j0:], ldc, accumulate)
				continue
			}
			// An edge tile: compute the whole tile aside, keep what exists.
			kernel(k, as, aRow, aStep, bs, bStep, tile, nr, false)
			for r := 0; r < rows; r++ {
				dst := c[(i0+r)*ldc+j0 : (i0+r)*ldc+j0+cols]
				src := tile[r*nr : r*nr+cols]
				if accumulate {
					for j, v := range src {
						dst[j] += v
					}
				} else {
					copy(dst, src)
				}
			}
		}
	}
}

// SumRows sets out[j] to the sum of column j of the m×n matrix a (row
// stride lda): the product 1ᵀ·a, so that it runs on the micro-kernel
// instead of one scalar add at a time.
func SumRows[F Float](w *Workspace, m, n int, a []F, lda int, out []F) {
	var ones *[]F
	switch any(out).(type) {
	case []float32:
		ones = any(&w.ones32).(*[]F)
	default:
		ones = any(&w.ones64).(*[]F)
	}
	if len(*ones) < m {
		*ones = make([]F, m)
		for i := range *ones {
			(*ones)[i] = 1
		}
	}
	Mul(w, false, false, 1, n, m, *ones, m, a, lda, out, n, false)
}

// packB copies columns j0 … n−1 of op(B) (k×n) into panels of nr columns:
// panel q holds, for each p in 0..k, the nr entries (p, j0+q·nr …), zero
// past column n.
func packB[F Float](dst []F, trans bool, j0, n, k int, b []F, ldb, nr int) {
	for q := 0; j0+q*nr < n; q++ {
		panel := dst[q*nr*k : (q+1)*nr*k]
		c0 := j0 + q*nr
		cols := min(nr, n-c0)
		if !trans {
			for p := 0; p < k; p++ {
				row := panel[p*nr : p*nr+nr]
				copy(row, b[p*ldb+c0:p*ldb+c0+cols])
				clear(row[cols:])
			}
			continue
		}
		// B is stored n×k: column j of op(B) is row j of b. Eight rows by
		// eight columns at a time with the assembly transpose, then four
		// rows at a time, so that each step of p stores four neighbours.
		jj := 0
		if b32, ok := any(b).([]float32); ok && haveAsm {
			p32 := any(panel).([]float32)
			for ; jj+8 <= cols; jj += 8 {
				r := b32[(c0+jj)*ldb:]
				_ = r[7*ldb+k-1] // the block rows the assembly reads
				p := 0
				for ; p+8 <= k; p += 8 {
					transpose8F32(&p32[p*nr+jj], nr, &r[p], ldb)
				}
				for ; p < k; p++ {
					for i := 0; i < 8; i++ {
						p32[p*nr+jj+i] = r[i*ldb+p]
					}
				}
			}
		}
		for ; jj+4 <= cols; jj += 4 {
			r := b[(c0+jj)*ldb:]
			s0, s1, s2, s3 := r[:k], r[ldb:ldb+k], r[2*ldb:2*ldb+k], r[3*ldb:3*ldb+k]
			for p := range s0 {
				d := panel[p*nr+jj : p*nr+jj+4 : p*nr+jj+4]
				d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
			}
		}
		for ; jj < cols; jj++ {
			src := b[(c0+jj)*ldb : (c0+jj)*ldb+k]
			for p, v := range src {
				panel[p*nr+jj] = v
			}
		}
		for ; jj < nr; jj++ {
			for p := 0; p < k; p++ {
				panel[p*nr+jj] = 0
			}
		}
	}
}

// packA copies rows i0 … i0+rows−1 (rows < mr) of op(A) into dst,
// interleaved: dst[p·mr+r] is element (i0+r, p), zero for the missing rows.
func packA[F Float](dst []F, trans bool, i0, rows, k int, a []F, lda int) {
	for p := 0; p < k; p++ {
		d := dst[p*mr : p*mr+mr]
		for r := range d {
			switch {
			case r >= rows:
				d[r] = 0
			case trans:
				d[r] = a[p*lda+i0+r]
			default:
				d[r] = a[(i0+r)*lda+p]
			}
		}
	}
}

func grow[F Float](s []F, n int) []F {
	if cap(s) < n {
		return make([]F, n)
	}
	return s[:n]
}

func nrOf[F Float]() int {
	var z F
	if _, ok := any(z).(float32); ok {
		return nr32
	}
	return nr64
}

// buffers returns w's packing buffers and edge tile for element type F.
func buffers[F Float](w *Workspace) (ap, bp *[]F, tile []F) {
	var z F
	switch any(z).(type) {
	case float32:
		return any(&w.a32).(*[]F), any(&w.b32).(*[]F), any(w.t32[:]).([]F)
	default:
		return any(&w.a64).(*[]F), any(&w.b64).(*[]F), any(w.t64[:]).([]F)
	}
}
