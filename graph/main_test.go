package graph

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/gptg/gptg/graph/internal/gemm"
)

// TestMain runs the package's tests on the matrix-product kernels that
// GPTG_TEST_KERNELS names (one of gemm.Paths: "AVX-512", "AVX2", "Go"),
// so that the golden, finite-difference and fused-against-unfused tests
// can be run on each family this CPU has (.ci/run does, for AVX2); unset,
// the fastest. `-tags purego` builds the plain-Go twins of every assembly
// routine instead (GELU and AdamW as well).
func TestMain(m *testing.M) {
	name := os.Getenv("GPTG_TEST_KERNELS")
	if name == "" {
		os.Exit(m.Run())
	}
	if !slices.Contains(gemm.Paths(), name) {
		fmt.Fprintf(os.Stderr, "GPTG_TEST_KERNELS=%q: this machine's kernel families are %q\n", name, gemm.Paths())
		os.Exit(2)
	}
	restore := gemm.Use(name)
	code := m.Run()
	restore()
	os.Exit(code)
}
