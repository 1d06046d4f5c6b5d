package gemm

import (
	"testing"

	"github.com/gptg/gptg/internal/armwords"
)

// TestNEONEncodings: every instruction that kernel_arm64.s writes as a
// WORD is the one its comment names (binutils' disassembler reads it).
func TestNEONEncodings(t *testing.T) {
	armwords.Check(t, "kernel_arm64.s")
}
