//go:build !amd64 || purego

package gemm

import "unsafe"

// Without amd64 assembly there is no AMX kernel; the functions below are
// never called.
func amxPermit() string { return "no AMX kernel in this build" }

func amxBF16(chunks int, a, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, strips int, tmp unsafe.Pointer) {
	panic("unreachable")
}

func amxPeak(n int)  { panic("unreachable") }
func amxCPU() string { return "no AMX kernel in this build" }
