package memlimit

import "fmt"

// Bound is how much a reader of unbounded input (a corpus it holds while
// counting, a picture it draws) may hold: its fixed cap, or less when the
// process may not take that much (Limit then names the limit that
// decides).
type Bound struct {
	Bytes float64
	Limit string  // "" when the fixed cap decides
	slack float64 // what Safe leaves out, in the caller's bytes
}

// Cap lowers fixed, the bytes a reader may hold, to what fits in this
// process's headroom when holding n bytes takes peakPerByte·n at its peak
// (the garbage collector's slack, slices growing by doubling): a fixed
// cap that takes more than the process may still use would end in the
// runtime's out-of-memory trace instead of the reader's own message.
//
// One heap arena (64 MiB) of the headroom is kept back: Go's heap takes
// address space an arena at a time, so under ulimit -v a heap of 80 MB
// already holds 128 MB of it.
func Cap(fixed, peakPerByte float64) Bound {
	if h, ok := Find(); ok && (h.Bytes-heapArena)/peakPerByte < fixed {
		return Bound{max(h.Bytes-heapArena, 0) / peakPerByte, h.Limit, runSlack / peakPerByte}
	}
	return Bound{Bytes: fixed}
}

// heapArena is the address space Go's heap grows by on 64-bit Linux.
const heapArena = 64 << 20

// runSlack is by how much the headroom one run finds differs from the
// next one's: about a thread's reservation (8 MiB of stack and a 64 MiB
// malloc arena in a cgo build), as the runtime starts a thread more or
// less before the check (measured: the tokens an attention picture could
// draw, 65 in one run and 47 in the next under the same ulimit -v).
const runSlack = 72 << 20

// Safe is what a refusal may suggest trying again under the same limit:
// the bound, less what the next run's headroom may lack.
func (b Bound) Safe() float64 { return max(b.Bytes-b.slack, 0) }

// Exceeded says what a reader's refusal says after "more than ": "the 512
// MiB <what>" for the fixed cap, or the lower bound and the limit that
// decides it.
func (b Bound) Exceeded(what string) string {
	if b.Limit == "" {
		return fmt.Sprintf("the %s %s", mib(b.Bytes), what)
	}
	return fmt.Sprintf("the %s this process may still hold under %s", mib(b.Bytes), b.Limit)
}

func mib(n float64) string { return fmt.Sprintf("%.0f MiB", n/(1<<20)) }
