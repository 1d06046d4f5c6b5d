// Package pool runs the parts of a job on a fixed set of goroutines that
// wait for work by spinning for a short while before they sleep.
//
// A kernel of a small model takes 10–100 µs; starting a goroutine for each
// part of it (go f()) and waking an idle core costs several µs more, often
// as much as the second core saves: at nanoGPT's CPU shape the per-op
// goroutines held the two-core speed-up to 1.2–1.4×. Workers that keep
// spinning between the ops of a training step pick up the next part within
// a fraction of a µs, as OpenMP's and OpenBLAS's threads do. After
// spinFor without work a worker sleeps on a channel, so an idle program
// (between steps of a sampling prompt, say) does not hold a core.
package pool

import (
	"sync/atomic"
	"time"
)

// spinFor is how long an idle worker spins before it sleeps.
const spinFor = 200 * time.Microsecond

// Pool is size goroutines' worth of workers: the caller of Run and
// size−1 background goroutines. Run must not be called by two goroutines
// at once.
//
// The parts of a job are claimed in order by whoever comes first, the
// caller included: a worker that the operating system has not scheduled
// (a busy machine) leaves its parts to the caller instead of making it
// wait. claim holds the job's generation (high 32 bits) and its next
// unclaimed part (low 32 bits) in one word, so that a worker that wakes
// late, after its job is over, cannot claim a part of the next one by
// mistake, and a job allocates nothing.
type Pool struct {
	members []*member
	f       func(int)
	parts   atomic.Int32
	claim   atomic.Uint64
	pending atomic.Int32 // parts of the current job not yet finished
}

// runParts claims and runs parts of the current job until none is left.
func (p *Pool) runParts() {
	for {
		c := p.claim.Load()
		if int32(uint32(c)) >= p.parts.Load() {
			return
		}
		if !p.claim.CompareAndSwap(c, c+1) {
			continue
		}
		// The claim succeeded, so the job of generation c>>32 is still
		// running (this part is not finished) and f is its own.
		p.f(int(uint32(c)))
		p.pending.Add(-1)
	}
}

// member is one background goroutine.
type member struct {
	state  atomic.Int32 // idle, posted or closed
	parked atomic.Bool  // asleep on wake (or about to be)
	wake   chan struct{}
}

const (
	idle int32 = iota
	posted
	closed
)

// New starts a pool of size workers (the caller of Run counts as one).
// Close stops them; a pool that is dropped without Close keeps its
// sleeping goroutines, so owners close it or attach a cleanup.
func New(size int) *Pool {
	p := &Pool{}
	for range max(size, 1) - 1 {
		m := &member{wake: make(chan struct{}, 1)}
		p.members = append(p.members, m)
		go m.loop(p)
	}
	return p
}

// Size is the number of parts Run can run at once.
func (p *Pool) Size() int { return len(p.members) + 1 }

// Run calls f(0), …, f(parts−1), each once, on the calling goroutine and
// the pool's workers, and returns when all have returned. Which goroutine
// runs a part varies from run to run; f must not care.
func (p *Pool) Run(parts int, f func(part int)) {
	if parts <= 1 || len(p.members) == 0 {
		for i := range parts {
			f(i)
		}
		return
	}
	p.f = f
	p.pending.Store(int32(parts))
	p.parts.Store(int32(parts))
	p.claim.Store((p.claim.Load()>>32 + 1) << 32) // a new generation, part 0
	for _, m := range p.members[:min(parts, p.Size())-1] {
		m.post()
	}
	p.runParts()
	for spins := 0; p.pending.Load() != 0; spins++ {
		if spins%64 == 63 {
			yield()
		}
	}
	p.f = nil // drop the job's references
}

// Close stops the background goroutines; the pool must not be used after.
func (p *Pool) Close() {
	for _, m := range p.members {
		m.state.Store(closed)
		m.signal()
	}
}

func (m *member) post() {
	m.state.CompareAndSwap(idle, posted)
	m.signal()
}

// signal wakes the member if it sleeps. A member that is only about to
// sleep sees the new state before it does; a wake token it does not
// consume makes its next sleep return at once, which costs one more look
// at the state.
func (m *member) signal() {
	if m.parked.Load() {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

func (m *member) loop(p *Pool) {
	for m.await() {
		p.runParts()
	}
}

// await waits for a job (true) or for Close (false).
func (m *member) await() bool {
	start := time.Now()
	for spins := 0; ; spins++ {
		switch m.state.Load() {
		case posted:
			m.state.CompareAndSwap(posted, idle)
			return true
		case closed:
			return false
		}
		if spins%64 != 63 {
			continue
		}
		yield()
		if time.Since(start) > spinFor {
			m.parked.Store(true)
			if m.state.Load() == idle {
				<-m.wake
			}
			m.parked.Store(false)
			start = time.Now()
		}
	}
}
