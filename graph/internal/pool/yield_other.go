//go:build !linux

package pool

import "runtime"

// yield lets other goroutines run (elsewhere than Linux the operating
// system's own yield is not reached from Go).
func yield() { runtime.Gosched() }
