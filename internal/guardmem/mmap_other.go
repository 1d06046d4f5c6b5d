//go:build !linux

package guardmem

import "testing"

// guarded needs mmap and mprotect: elsewhere the guard tests are skipped.
func guarded(tb testing.TB, size int, before bool) []byte {
	tb.Skip("guardmem: guard pages need mmap (Linux here)")
	return nil
}
