package gemm

// kernel computes the mr×nr tile of C at c (row stride ldc):
//
//	c[r][j] = Σ_p a[r*aRow + p*aStep] · b[p*bStep + j]
//
// or c += … when accumulate is set. The caller guarantees that every
// element the sum reads exists. The assembly kernels add the same products
// in the same order, rounding each multiply-add once (FMA).
func kernel[F Float](k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc int, accumulate bool) {
	// One bounds check per tile instead of one per element: the assembly
	// reads these last elements and nothing beyond them.
	_ = a[(mr-1)*aRow+(k-1)*aStep]
	switch a := any(a).(type) {
	case []float32:
		b, c := any(b).([]float32), any(c).([]float32)
		_ = b[(k-1)*bStep+nr32-1]
		_ = c[(mr-1)*ldc+nr32-1]
		if haveAsm {
			kernelF32(k, &a[0], aRow, aStep, &b[0], bStep, &c[0], ldc, accumulate)
			return
		}
		kernelGo(k, a, aRow, aStep, b, bStep, c, ldc, nr32, accumulate)
	case []float64:
		b, c := any(b).([]float64), any(c).([]float64)
		_ = b[(k-1)*bStep+nr64-1]
		_ = c[(mr-1)*ldc+nr64-1]
		if haveAsm {
			kernelF64(k, &a[0], aRow, aStep, &b[0], bStep, &c[0], ldc, accumulate)
			return
		}
		kernelGo(k, a, aRow, aStep, b, bStep, c, ldc, nr64, accumulate)
	}
}

// kernelGo is the micro-kernel in plain Go: the tile is summed in a local
// array, one product per step of p, as the vector registers of the assembly do.
func kernelGo[F Float](k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc, nr int, accumulate bool) {
	var acc [mr * nr32]F
	for p := 0; p < k; p++ {
		br := b[p*bStep : p*bStep+nr]
		for r := 0; r < mr; r++ {
			av := a[r*aRow+p*aStep]
			t := acc[r*nr : r*nr+nr]
			for j, bv := range br {
				t[j] += av * bv
			}
		}
	}
	for r := 0; r < mr; r++ {
		dst := c[r*ldc : r*ldc+nr]
		src := acc[r*nr : r*nr+nr]
		if accumulate {
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(dst, src)
		}
	}
}
