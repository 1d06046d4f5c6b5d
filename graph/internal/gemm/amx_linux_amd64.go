//go:build amd64 && linux && !purego

package gemm

import "syscall"

// amxPermit asks Linux (5.16 and later) for the tile state once per
// process: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). Without
// it the first tile instruction kills the process (SIGILL). The kernel
// grants it only if every thread's alternate signal stack can hold the
// larger signal frame (≈ 11 KiB with the 8 KiB of tile data): Go's signal
// stacks are 32 KiB. It returns why AMX is not used, or "".
func amxPermit() string {
	if why := amxCPU(); why != "" {
		return why
	}
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	if _, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); errno != 0 {
		return "arch_prctl(ARCH_REQ_XCOMP_PERM) refused: " + errno.Error()
	}
	return ""
}
