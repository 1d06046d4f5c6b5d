package pool

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testwait"
)

// TestRunCallsEveryPartOnce runs jobs of every size up to the pool's,
// back to back and after the workers have gone to sleep, and checks that
// each part ran exactly once and that Run returned only after all had.
func TestRunCallsEveryPartOnce(t *testing.T) {
	p := New(4)
	defer p.Close()
	if p.Size() != 4 {
		t.Fatalf("Size = %d, want 4", p.Size())
	}
	for round := range 200 {
		if round == 100 {
			time.Sleep(5 * spinFor) // every worker asleep: Run must wake them
		}
		parts := 1 + round%p.Size()
		counts := make([]atomic.Int32, parts)
		var finished atomic.Int32
		p.Run(parts, func(i int) {
			if i%2 == 1 {
				time.Sleep(10 * time.Microsecond) // a slow part: Run must wait for it
			}
			counts[i].Add(1)
			finished.Add(1)
		})
		if got := finished.Load(); got != int32(parts) {
			t.Fatalf("round %d: Run returned after %d of %d parts", round, got, parts)
		}
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("round %d: part %d ran %d times", round, i, c)
			}
		}
	}
}

// TestCloseStopsWorkers checks that Close ends the background goroutines,
// spinning or asleep.
func TestCloseStopsWorkers(t *testing.T) {
	waitForMembers(t, 0) // the other tests' pools are closed
	spinning, sleeping := New(3), New(3)
	spinning.Run(3, func(int) {})
	sleeping.Run(3, func(int) {})
	// The workers have started by the end of Run but may not have been
	// scheduled yet on a busy machine: wait for them.
	testwait.Until(t, "the 4 workers of two pools of 3", func() bool { return members() == 4 })
	time.Sleep(5 * spinFor) // one pool's workers now asleep, the other's spinning
	sleeping.Close()
	spinning.Run(2, func(int) {})
	spinning.Close()
	waitForMembers(t, 0)
}

// waitForMembers waits for the number of workers to fall to n.
func waitForMembers(t *testing.T, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("the workers to fall to %d after Close", n), func() bool { return members() <= n })
}

// members counts the goroutines running a pool's worker loop.
func members() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "pool.(*member).loop(")
}

// BenchmarkRun is the round trip of a job of two empty parts: what a
// kernel split over two workers pays beyond its arithmetic.
func BenchmarkRun(b *testing.B) {
	p := New(2)
	defer p.Close()
	f := func(int) {}
	for range b.N {
		p.Run(2, f)
	}
}

// BenchmarkGo is the same round trip with a goroutine started per part,
// as kernels did before the pool.
func BenchmarkGo(b *testing.B) {
	done := make(chan struct{})
	for range b.N {
		go func() { done <- struct{}{} }()
		<-done
	}
}
