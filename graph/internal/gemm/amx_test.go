package gemm

import "testing"

// TestAMXBlocks: the AMX kernel's blocks of k are the other bfloat16
// kernels' (the model's sums depend on where the blocks start) and whole
// chunks of one TDPBF16PS.
func TestAMXBlocks(t *testing.T) {
	if amxKernels.kc != bf16Kernels.kc || amxKernels.kc%bf16Chunk != 0 {
		t.Errorf("AMX's kc %d, the bfloat16 kernels' %d: both must be one multiple of %d", amxKernels.kc, bf16Kernels.kc, bf16Chunk)
	}
	if amxKernels.mc%amxKernels.mr != 0 || amxKernels.nc%amxKernels.nr != 0 {
		t.Errorf("AMX's mc %d and nc %d must be whole blocks of %d×%d", amxKernels.mc, amxKernels.nc, amxKernels.mr, amxKernels.nr)
	}
}
