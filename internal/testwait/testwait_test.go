package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestForWaitsForTheCondition: a condition that comes to hold on another
// goroutine ends the wait; one that never holds ends it false at the
// bound.
func TestForWaitsForTheCondition(t *testing.T) {
	var set atomic.Bool
	go func() { set.Store(true) }()
	if !For(set.Load) {
		t.Fatal("For gave up on a condition another goroutine made true")
	}
	if within(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("within reported a condition that never held")
	}
}
