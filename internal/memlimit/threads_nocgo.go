//go:build !cgo

package memlimit

// threadReserve is the address space each new thread reserves: without
// cgo, Go's own per-thread and per-P structures (measured: VmPeak 1326
// MiB at GOMAXPROCS=2, 5 threads; 1393 MiB at 16, 14 threads).
const threadReserve = 8 << 20
