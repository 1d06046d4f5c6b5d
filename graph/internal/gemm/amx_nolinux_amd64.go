//go:build amd64 && !linux && !purego

package gemm

// amxPermit: the AMX kernel runs on Linux only, where the tile state is
// asked for with arch_prctl (other systems were not tried).
func amxPermit() string {
	if why := amxCPU(); why != "" {
		return why
	}
	return "AMX is used on Linux only"
}
