//go:build unix

package gemm

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time used by this process so far (all threads): on a
// machine shared with other work, flops per CPU second measure the code,
// flops per wall second also the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
