package graph

import (
	"testing"
	"unsafe"
)

// TestNewBuffer: newBuffer gives n zeroed elements, capped at n (an append
// must not run into the rest of the padded allocation), and starts large
// buffers on a huge-page boundary where the system has huge pages.
func TestNewBuffer(t *testing.T) {
	for _, n := range []int{1, 1000, 2 * hugePage / 4, 3*hugePage/4 + 5} {
		b := newBuffer[float32](n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("n %d: len %d cap %d", n, len(b), cap(b))
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("n %d: element %d is %v", n, i, v)
			}
		}
		aligned := uintptr(unsafe.Pointer(&b[0]))%hugePage == 0
		if big := n*4 >= 2*hugePage; big && hugePagesAvailable && !aligned {
			t.Fatalf("n %d: %d bytes not on a huge-page boundary", n, n*4)
		}
	}
	b := newBuffer[float64](hugePage/4 + 3)
	if len(b) != hugePage/4+3 || (hugePagesAvailable && uintptr(unsafe.Pointer(&b[0]))%hugePage != 0) {
		t.Fatalf("float64: len %d at %p", len(b), &b[0])
	}
}
