// Package testwait is how a test waits for what another goroutine or
// process does: it polls a condition until it holds, and fails only after
// Hang, a bound no busy machine reaches, so that a wait never depends on
// how loaded the machine is. A test never sleeps for a fixed time to let
// something happen, and never checks that something happened within a
// wall-clock window: a busy machine stretches both.
package testwait

import (
	"testing"
	"time"
)

// Hang is how long a wait lasts before it is a hang: far beyond what any
// wait of the tests takes on a machine ten times busier than its cores.
const Hang = 2 * time.Minute

// poll is the time between two looks at a condition.
const poll = 5 * time.Millisecond

// Until polls cond until it holds; after Hang it fails the test, naming
// what it waited for.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !For(cond) {
		t.Fatalf("waited %v for %s", Hang, what)
	}
}

// For polls cond until it holds and reports true, or false after Hang.
func For(cond func() bool) bool {
	return within(Hang, cond)
}

// within polls cond for up to bound.
func within(bound time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(bound); !cond(); time.Sleep(poll) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
