// Package cputime is the CPU time this process has used, user and system,
// all its threads: what a test bounds to catch work grown slow, since a
// busy machine stretches a wall-clock time but not the CPU time spent.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time the process has used so far.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic("getrusage: " + err.Error())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
