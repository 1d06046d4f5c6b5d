package ablate

import (
	"fmt"
	"io"
	"sync"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/memlimit"
)

// childRuntime is what a training process takes beyond its estimate (the
// estimate counts what the training adds): the Go runtime and gptg's own
// code, 23 MB of RSS for a shakespeare training whose estimate is 12 MiB,
// and the slack config.CheckMemory keeps under a cgroup.
const childRuntime = 32 << 20

// headroom is memlimit.Find but for the tests.
var headroom = memlimit.Find

// memoryBudget keeps the trainings that run at once (--jobs) within what
// the process's cgroup or machine may still give. Each training checks its
// own estimate against the headroom when it starts, but its siblings have
// not grown yet then: two 443 MiB trainings both passed in a 600 MiB
// cgroup and the kernel killed one. So a training reserves
// its estimate here first and waits while the others' reservations leave
// too little. Under ulimit -v or -d every child has a limit of its own,
// and nothing is shared.
type memoryBudget struct {
	mu      sync.Mutex
	changed *sync.Cond
	start   float64 // the headroom when the runs began
	free    float64 // what the running trainings have not reserved
	limit   string
	shared  bool
	running int
	told    bool
	log     io.Writer
}

func newMemoryBudget(log io.Writer) *memoryBudget {
	b := &memoryBudget{log: log}
	b.changed = sync.NewCond(&b.mu)
	if h, ok := headroom(); ok && !h.AddressSpace {
		b.start, b.free, b.limit, b.shared = h.Bytes, h.Bytes, h.Limit, true
	}
	return b
}

// reserve waits until need fits beside the trainings running (a training
// alone always starts: its own check decides), then reserves it. The
// returned function gives it back.
func (b *memoryBudget) reserve(name string, need float64) (release func()) {
	if b == nil || !b.shared {
		return func() {}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.running > 0 && need > b.free {
		if !b.told {
			b.told = true
			fmt.Fprintf(b.log, "%s waits: its training needs about %s and the runs in progress leave %s of %s (under %s); fewer run at once\n",
				name, config.FormatBytes(need), config.FormatBytes(max(b.free, 0)), config.FormatBytes(b.start), b.limit)
		}
		b.changed.Wait()
	}
	b.free -= need
	b.running++
	return func() {
		b.mu.Lock()
		b.free += need
		b.running--
		b.mu.Unlock()
		b.changed.Broadcast()
	}
}
