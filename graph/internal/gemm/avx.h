// Text shared by the AVX kernels (kernel_amd64.s, bf16_amd64.s,
// peak_amd64.s).

// ZERO_Z16 and ZERO_Z24 zero Z0–Z15 and Z0–Z23, the AVX-512 kernels'
// accumulators; ZERO_Y12 zeroes Y0–Y11, the AVX2 kernels', with XOR
// (VXORPS or VXORPD).
#define ZERO_Z16 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15
#define ZERO_Z24 \
	ZERO_Z16; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23
#define ZERO_Y12(XOR) \
	XOR Y0, Y0, Y0; \
	XOR Y1, Y1, Y1; \
	XOR Y2, Y2, Y2; \
	XOR Y3, Y3, Y3; \
	XOR Y4, Y4, Y4; \
	XOR Y5, Y5, Y5; \
	XOR Y6, Y6, Y6; \
	XOR Y7, Y7, Y7; \
	XOR Y8, Y8, Y8; \
	XOR Y9, Y9, Y9; \
	XOR Y10, Y10, Y10; \
	XOR Y11, Y11, Y11

// The tile of 12 rows of 32 float32 (avx512F32, bf16Avx512): row r in
// Z2r, Z2r+1; DX = &c's current row, R8 = ldc, and when adding SI = the
// current row at add, R9 = ldAdd (strides in bytes).

// PREFETCH_C12 prefetches the tile's 12 rows of C (two lines each), so
// that they are in L1 by the end of the loop. Uses AX.
#define PREFETCH_C12 \
	MOVQ DX, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX)

// ADD_STORE_C12 adds the rows at add to the tile and stores it in C.
#define ADD_STORE_C12 \
	VADDPS (SI), Z0, Z0; \
	VADDPS 64(SI), Z1, Z1; \
	VMOVUPS Z0, (DX); \
	VMOVUPS Z1, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z2, Z2; \
	VADDPS 64(SI), Z3, Z3; \
	VMOVUPS Z2, (DX); \
	VMOVUPS Z3, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z4, Z4; \
	VADDPS 64(SI), Z5, Z5; \
	VMOVUPS Z4, (DX); \
	VMOVUPS Z5, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z6, Z6; \
	VADDPS 64(SI), Z7, Z7; \
	VMOVUPS Z6, (DX); \
	VMOVUPS Z7, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z8, Z8; \
	VADDPS 64(SI), Z9, Z9; \
	VMOVUPS Z8, (DX); \
	VMOVUPS Z9, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z10, Z10; \
	VADDPS 64(SI), Z11, Z11; \
	VMOVUPS Z10, (DX); \
	VMOVUPS Z11, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z12, Z12; \
	VADDPS 64(SI), Z13, Z13; \
	VMOVUPS Z12, (DX); \
	VMOVUPS Z13, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z14, Z14; \
	VADDPS 64(SI), Z15, Z15; \
	VMOVUPS Z14, (DX); \
	VMOVUPS Z15, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z16, Z16; \
	VADDPS 64(SI), Z17, Z17; \
	VMOVUPS Z16, (DX); \
	VMOVUPS Z17, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z18, Z18; \
	VADDPS 64(SI), Z19, Z19; \
	VMOVUPS Z18, (DX); \
	VMOVUPS Z19, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z20, Z20; \
	VADDPS 64(SI), Z21, Z21; \
	VMOVUPS Z20, (DX); \
	VMOVUPS Z21, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	VADDPS (SI), Z22, Z22; \
	VADDPS 64(SI), Z23, Z23; \
	VMOVUPS Z22, (DX); \
	VMOVUPS Z23, 64(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI

// STORE_C12 stores the tile in C.
#define STORE_C12 \
	VMOVUPS Z0, (DX); \
	VMOVUPS Z1, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z2, (DX); \
	VMOVUPS Z3, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z4, (DX); \
	VMOVUPS Z5, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z6, (DX); \
	VMOVUPS Z7, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z8, (DX); \
	VMOVUPS Z9, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z10, (DX); \
	VMOVUPS Z11, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z12, (DX); \
	VMOVUPS Z13, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z14, (DX); \
	VMOVUPS Z15, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z16, (DX); \
	VMOVUPS Z17, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z18, (DX); \
	VMOVUPS Z19, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z20, (DX); \
	VMOVUPS Z21, 64(DX); \
	ADDQ R8, DX; \
	VMOVUPS Z22, (DX); \
	VMOVUPS Z23, 64(DX); \
	ADDQ R8, DX
