package fused

import (
	"runtime"

	"github.com/gptg/gptg/graph/internal/gemm"
	"github.com/gptg/gptg/graph/internal/pool"
)

// team is the goroutines one graph's kernels may use. The tape runs one op
// at a time; an op's kernel splits its own work over the team and waits.
//
// Numbers never depend on the team's size: work is split only where each
// item of the output is computed by one goroutine from start to end (rows
// of an activation, whole heads, columns of a sum over rows), in the same
// order whatever the split, and whole-matrix products rely on gemm's own
// promise of the same bits for every thread count. So a run with 1, 2 or 3
// threads gives bit-identical weights (TestThreadsGiveSameWeights).
type team struct {
	// whole serves products over whole matrices: gemm splits them itself.
	whole *gemm.Workspace
	// own[i] is worker i's workspace for products inside split.
	own []*gemm.Workspace
	// workers run the parts of split and of whole's products: goroutines
	// that spin between the ops of a step instead of being started for
	// each (package pool).
	workers *pool.Pool

	// The job split is running: f over [0, n) in parts ranges. runPart,
	// the method value made once, hands part i its range, so that a
	// split allocates nothing (a closure per call would).
	f       func(ws *gemm.Workspace, lo, hi int)
	n       int
	parts   int
	runPart func(part int)
}

func newTeam(threads int) *team {
	threads = max(threads, 1)
	workers := pool.New(threads)
	t := &team{whole: &gemm.Workspace{Threads: threads, Pool: workers}, own: make([]*gemm.Workspace, threads), workers: workers}
	for i := range t.own {
		t.own[i] = &gemm.Workspace{}
	}
	t.runPart = t.part
	// A graph has no Close: its workers stop when the team is collected.
	runtime.AddCleanup(t, func(p *pool.Pool) { p.Close() }, workers)
	return t
}

// bf16 makes every product of the team round its float32 operands to
// bfloat16 as it packs them, summing in float32 (model.dtype "bfloat16"):
// the products are all the layers' matrix products (linear layers, the
// attention's scores and weighted sums, the output layer, forward and
// backward), and nothing else runs through the workspaces' products.
func (t *team) bf16() {
	t.whole.BF16 = true
	for _, ws := range t.own {
		ws.BF16 = true
	}
}

// minParallelActivation is the size of an activation (rows × embedding)
// below which a graph runs on one goroutine whatever Threads says: its
// kernels take a few microseconds each, about what waking a second
// goroutine costs, and the seed config (128 × 64) measured slower on two
// threads than on one. The numbers are the same either way. Like
// minSplitWork, a variable so that tests can split every job.
var minParallelActivation = 1 << 15

// minParallelWidth is the embedding from which a graph's products are
// worth splitting however few its rows: a graph of one row (sampling's
// cached graph) multiplies a vector by every weight matrix, and from a
// width of 512 (a matrix of a million weights or more in the feed-forward)
// reading the weights on two cores takes less time than waking the second.
const minParallelWidth = 512

// threadsFor is the team size for a graph whose activations hold size
// values, of embedding width.
func threadsFor(threads, size, width int) int {
	if size < minParallelActivation && width < minParallelWidth {
		return 1
	}
	return threads
}

// minSplitWork is the work (about one multiply-add or one exp per unit)
// below which splitting costs more than it saves: waking a goroutine and
// waiting for it takes a few microseconds, a few thousand units of work.
// A variable so that tests can split every job.
var minSplitWork = 1 << 15

// split calls f on contiguous ranges [lo, hi) that cover [0, n), one range
// per worker, and waits for all of them; work estimates the whole job, so
// that small jobs run in this goroutine alone. f must compute each item
// independently of the range it lands in.
func (t *team) split(n, work int, f func(ws *gemm.Workspace, lo, hi int)) {
	workers := min(len(t.own), n)
	if workers <= 1 || work < minSplitWork {
		f(t.own[0], 0, n)
		return
	}
	t.f, t.n, t.parts = f, n, workers
	t.workers.Run(workers, t.runPart)
	t.f = nil // drop the job's references
}

// part runs part w of the current split.
func (t *team) part(w int) { t.f(t.own[w], t.n*w/t.parts, t.n*(w+1)/t.parts) }

// rows splits the rows [0, n) of a kernel's job over the team; work
// estimates the whole job.
func rows[F gemm.Float](a *args[F], n, work int, f func(lo, hi int)) {
	a.t.split(n, work, func(_ *gemm.Workspace, lo, hi int) { f(lo, hi) })
}

// elements splits n elements over the team in runs of eight, so that every
// element takes the same path through package gelu's vector body or its
// scalar tail, whatever the split.
func elements[F gemm.Float](a *args[F], n, work int, f func(lo, hi int)) {
	a.t.split((n+7)/8, work, func(_ *gemm.Workspace, lo, hi int) { f(lo*8, min(hi*8, n)) })
}

// index returns the number of the worker whose workspace ws is.
func (t *team) index(ws *gemm.Workspace) int {
	for i, own := range t.own {
		if own == ws {
			return i
		}
	}
	panic("graph: a workspace of no worker of the team")
}
