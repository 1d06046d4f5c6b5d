package guardmem

import (
	"os"
	"sync"
	"syscall"
	"testing"
)

// spare holds the mappings (data bytes of body and an inaccessible page
// after or before them) whose tests have ended, by data and side, for
// the next tests to take: a test of many small products would otherwise
// spend most of its time in mmap, mprotect and munmap.
var spare struct {
	sync.Mutex
	m map[[2]int][][]byte
}

// guarded returns size bytes, zeroed, that end where an inaccessible page
// begins (or, with before set, begin where one ends), from a mapping of
// whole pages that goes back to spare when tb's test ends.
func guarded(tb testing.TB, size int, before bool) []byte {
	tb.Helper()
	page := os.Getpagesize()
	data := (size + page - 1) / page * page
	key := [2]int{data, 0}
	if before {
		key[1] = 1
	}
	spare.Lock()
	var mem []byte
	if list := spare.m[key]; len(list) > 0 {
		mem, spare.m[key] = list[len(list)-1], list[:len(list)-1]
	}
	spare.Unlock()
	if mem == nil {
		mem = newMapping(tb, data, page, before)
	}
	tb.Cleanup(func() {
		spare.Lock()
		defer spare.Unlock()
		if spare.m == nil {
			spare.m = map[[2]int][][]byte{}
		}
		spare.m[key] = append(spare.m[key], mem)
	})
	body := mem[:data]
	if before {
		body = mem[page:]
	}
	clear(body)
	if before {
		return body[:size:size]
	}
	return body[data-size:]
}

// newMapping maps data bytes of body and an inaccessible page beside them.
func newMapping(tb testing.TB, data, page int, before bool) []byte {
	tb.Helper()
	mem, err := syscall.Mmap(-1, 0, data+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		tb.Fatalf("guardmem: mmap of %d bytes: %v", data+page, err)
	}
	guard := mem[data:]
	if before {
		guard = mem[:page]
	}
	if err := syscall.Mprotect(guard, syscall.PROT_NONE); err != nil {
		tb.Fatalf("guardmem: mprotect: %v", err)
	}
	return mem
}
