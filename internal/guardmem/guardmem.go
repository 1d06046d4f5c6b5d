// Package guardmem places test operands against inaccessible pages, so
// that assembly reading or writing one element past a slice (or before
// it) faults at once instead of touching whatever lies there: Go's bounds
// checks do not reach into assembly, and the memory after a slice is
// usually zeros, so such a bug otherwise passes most runs.
//
// End gives a slice whose last element ends where a PROT_NONE page
// begins (over-reads and over-writes fault), Start one whose first
// element begins where such a page ends (under-reads fault). Run turns a
// fault inside f into a test failure (debug.SetPanicOnFault) instead of a
// crash of the test binary. Only tests import it.
package guardmem

import (
	"fmt"
	"runtime/debug"
	"testing"
	"unsafe"
)

// Number is an element type without pointers: memory outside Go's heap
// may hold it.
type Number interface {
	~float32 | ~float64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~int32 | ~int64
}

// End returns n zeroed Ts whose last ends exactly at an inaccessible page
// (len = cap = n). The mapping is released when tb's test ends.
func End[T Number](tb testing.TB, n int) []T {
	tb.Helper()
	size := n * int(unsafe.Sizeof(T(0)))
	mem := guarded(tb, size, false)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)
}

// Start returns n zeroed Ts whose first begins exactly where an
// inaccessible page ends (len = cap = n).
func Start[T Number](tb testing.TB, n int) []T {
	tb.Helper()
	size := n * int(unsafe.Sizeof(T(0)))
	mem := guarded(tb, size, true)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)
}

// CopyEnd returns a copy of s placed by End; CopyStart by Start.
func CopyEnd[T Number](tb testing.TB, s []T) []T {
	tb.Helper()
	g := End[T](tb, len(s))
	copy(g, s)
	return g
}

// CopyStart returns a copy of s placed by Start.
func CopyStart[T Number](tb testing.TB, s []T) []T {
	tb.Helper()
	g := Start[T](tb, len(s))
	copy(g, s)
	return g
}

// Placement is where a guard page lies: after the operands (End) or
// before them (Start).
type Placement int

const (
	AfterEnd Placement = iota
	BeforeStart
)

func (p Placement) String() string { return [...]string{"guard after", "guard before"}[p] }

// Placements lists both.
var Placements = []Placement{AfterEnd, BeforeStart}

// Copy returns a copy of s placed against a guard page as p says.
func Copy[T Number](tb testing.TB, p Placement, s []T) []T {
	tb.Helper()
	if p == BeforeStart {
		return CopyStart(tb, s)
	}
	return CopyEnd(tb, s)
}

// Run runs f with memory faults turned into panics and reports one as a
// failure of tb naming label and the faulting address; any other panic
// too (a bounds check in the Go wrapper, say).
func Run(tb testing.TB, label string, f func()) {
	tb.Helper()
	if _, msg := Catch(f); msg != "" {
		tb.Fatalf("%s: %s", label, msg)
	}
}

// Catch runs f with memory faults turned into panics and describes how
// it ended: fault is set for a memory fault, msg describes the fault or
// any other panic, and is empty when f returned.
func Catch(f func()) (fault bool, msg string) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if e, ok := r.(interface{ Addr() uintptr }); ok {
			fault, msg = true, fmt.Sprintf("memory fault at %#x (past or before an operand): %v", e.Addr(), r)
			return
		}
		msg = fmt.Sprintf("panic: %v", r)
	}()
	f()
	return false, ""
}

// Lengths are the row lengths the guard tests of the element-wise kernels
// run: every length from 0 to 40 (each tail of a loop 4, 8, 16 or 32
// wide, and each loop alone) and lengths around 64, 1024 and 4096.
var Lengths = func() []int {
	var ls []int
	for n := 0; n <= 40; n++ {
		ls = append(ls, n)
	}
	return append(ls, 63, 64, 65, 1023, 1024, 1025, 4096+15)
}()
