//go:build amd64 && !purego

package gemm

import "testing"

// TestAMXEncodings: every tile instruction amx_amd64.s writes as BYTEs
// is the one its comment names (objdump reads the test binary).
func TestAMXEncodings(t *testing.T) {
	checkBYTEs(t, "amx_amd64.s", 2, "ldtilecfg", "tilerelease", "tilezero", "tileloadd", "tilestored", "tdpbf16ps")
}
