package guardmem

import (
	"strings"
	"testing"
	"unsafe"
)

// TestGuards: every element of End's and Start's slices is usable, the
// element just past End's and just before Start's faults, and Catch
// reports that fault instead of the test binary crashing.
func TestGuards(t *testing.T) {
	for _, n := range []int{1, 7, 1024, 1025, 5000} {
		end, start := End[float32](t, n), Start[float64](t, n)
		if len(end) != n || cap(end) != n || len(start) != n || cap(start) != n {
			t.Fatalf("n %d: len/cap %d/%d and %d/%d", n, len(end), cap(end), len(start), cap(start))
		}
		if _, msg := Catch(func() {
			for i := range end {
				end[i] = float32(i)
			}
			for i := range start {
				start[i] = float64(i)
			}
		}); msg != "" {
			t.Fatalf("n %d: writing every element: %s", n, msg)
		}
		past := (*float32)(unsafe.Add(unsafe.Pointer(&end[n-1]), 4))
		if _, msg := Catch(func() { _ = *past }); !strings.Contains(msg, "memory fault") {
			t.Errorf("n %d: reading past End's slice: %q, want a memory fault", n, msg)
		}
		if _, msg := Catch(func() { *past = 1 }); !strings.Contains(msg, "memory fault") {
			t.Errorf("n %d: writing past End's slice: %q, want a memory fault", n, msg)
		}
		before := (*float64)(unsafe.Add(unsafe.Pointer(&start[0]), -8))
		if _, msg := Catch(func() { _ = *before }); !strings.Contains(msg, "memory fault") {
			t.Errorf("n %d: reading before Start's slice: %q, want a memory fault", n, msg)
		}
	}
	if s := End[uint32](t, 0); len(s) != 0 {
		t.Errorf("End(0): len %d", len(s))
	}
}
