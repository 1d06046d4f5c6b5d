//go:build cgo

package memlimit

// threadReserve is the address space each new thread reserves: built
// with cgo (Go's net package links it when a C compiler is there), a
// thread is a C thread, with an 8 MiB stack and, once it allocates, a
// 64 MiB malloc arena of its own (measured: VmPeak 1752 MiB at
// GOMAXPROCS=2, 6 threads; 2474 MiB at 16, 16 threads).
const threadReserve = 72 << 20
