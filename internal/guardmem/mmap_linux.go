package guardmem

import (
	"os"
	"syscall"
	"testing"
)

// guarded maps size bytes, rounded up to whole pages, plus one page made
// inaccessible after them (or before them, with before set), and returns
// the size bytes that touch that page. tb's cleanup unmaps them.
func guarded(tb testing.TB, size int, before bool) []byte {
	tb.Helper()
	page := os.Getpagesize()
	data := (size + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, data+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		tb.Fatalf("guardmem: mmap of %d bytes: %v", data+page, err)
	}
	tb.Cleanup(func() { syscall.Munmap(mem) })
	guard, body := mem[data:], mem[:data]
	if before {
		guard, body = mem[:page], mem[page:]
	}
	if err := syscall.Mprotect(guard, syscall.PROT_NONE); err != nil {
		tb.Fatalf("guardmem: mprotect: %v", err)
	}
	if before {
		return body[:size:size]
	}
	return body[data-size:]
}
