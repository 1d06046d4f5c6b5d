//go:build linux

package gemm

import (
	"syscall"
	"time"
	"unsafe"
)

// cpuTime is the CPU time used by this process so far (all threads, to
// the nanosecond: CLOCK_PROCESS_CPUTIME_ID; getrusage counts in ticks): on
// a machine shared with other work, flops per CPU second measure the
// code, flops per wall second also the neighbours.
func cpuTime() time.Duration {
	const clockProcessCPUTimeID = 2
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
