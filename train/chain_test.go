package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"
)

// TestChainGivesOneProcessSum: the rank chain's mean gradient, on 2, 3 and
// 6 ranks of 6 shards, over several of its messages (the last one short), is
// the bits of one process's fold of the same shards (addGrads), and both
// are the plain sum in shard order in the gradients' dtype, divided by
// the shard count, written out here as its own loop. Each link of the
// chain carries the loss and the stop flag (16 bytes) and the sums in the
// gradients' dtype: 4 bytes a value for float32, not 8.
func TestChainGivesOneProcessSum(t *testing.T) {
	t.Run("float32", func(t *testing.T) { testChain[float32](t) })
	t.Run("float64", func(t *testing.T) { testChain[float64](t) })
}

func testChain[F float32 | float64](t *testing.T) {
	const accum = 6
	total := 2*chainChunk/int(unsafe.Sizeof(F(0))) + 7
	rng := rand.New(rand.NewPCG(1, 2))
	shards := make([][]F, accum)
	losses := make([]float64, accum)
	for k := range shards {
		shards[k] = make([]F, total)
		for j := range shards[k] {
			// Magnitudes over several binades, so that the order of the
			// additions shows in the rounding.
			shards[k][j] = F(rng.NormFloat64() * math.Ldexp(1, rng.IntN(20)-10))
		}
		losses[k] = 1 + rng.Float64()
	}
	want := make([]F, total)
	for j := range want {
		s := shards[0][j]
		for k := 1; k < accum; k++ {
			s += shards[k][j]
		}
		want[j] = s / accum
	}
	wantLoss := 0.0
	for _, l := range losses {
		wantLoss += l / accum
	}

	var sums []any
	grads := make([]any, 1)
	for k := range accum {
		g := append([]F(nil), shards[k]...)
		grads[0] = g
		sums = addGrads(sums, grads, k, accum)
	}
	sameBits(t, "one process (addGrads)", grads[0].([]F), want)

	for _, ranks := range []int{2, 3, 6} {
		per := accum / ranks
		comms := newChanComms(ranks)
		means := make([][]F, ranks)
		errs := make([]error, ranks)
		gotLoss := make([]float64, ranks)
		var wg sync.WaitGroup
		for r := range ranks {
			wg.Go(func() {
				c := newChain[F](per, total)
				for j := range per {
					copy(c.shards[j], shards[r*per+j])
				}
				gotLoss[r], _, errs[r] = c.exchange(comms[r], accum, losses[r*per:(r+1)*per], false)
				means[r] = c.mean
			})
		}
		wg.Wait()
		for r := range ranks {
			if errs[r] != nil {
				t.Fatalf("%d ranks: rank %d: %v", ranks, r, errs[r])
			}
			sameBits(t, fmt.Sprintf("%d ranks, rank %d", ranks, r), means[r], want)
			if gotLoss[r] != wantLoss {
				t.Errorf("%d ranks, rank %d: loss %v, one process's %v", ranks, r, gotLoss[r], wantLoss)
			}
			if r < ranks-1 {
				want := 16 + total*int(unsafe.Sizeof(F(0)))
				if got := comms[r].sent[r+1]; got != want {
					t.Errorf("%d ranks: rank %d sent rank %d %d bytes along the chain, want %d", ranks, r, r+1, got, want)
				}
			}
		}
	}
}

func sameBits[F float32 | float64](t *testing.T, what string, got, want []F) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for j := range got {
		if got[j] != want[j] {
			t.Fatalf("%s: value %d is %v, the sum in shard order gives %v", what, j, got[j], want[j])
		}
	}
}

// chanComm is a Comm of ranks in one process, linked by channels: what
// the chain needs of MPI (point-to-point messages and a broadcast, both
// copying bytes).
type chanComm struct {
	rank  int
	links [][]chan []byte // links[from][to]
	sent  []int           // bytes sent to each rank by Send (not Bcast)
}

func newChanComms(ranks int) []*chanComm {
	links := make([][]chan []byte, ranks)
	for from := range links {
		links[from] = make([]chan []byte, ranks)
		for to := range links[from] {
			links[from][to] = make(chan []byte, 1)
		}
	}
	comms := make([]*chanComm, ranks)
	for r := range comms {
		comms[r] = &chanComm{rank: r, links: links, sent: make([]int, ranks)}
	}
	return comms
}

func (c *chanComm) Rank() int { return c.rank }
func (c *chanComm) Size() int { return len(c.links) }

func (c *chanComm) Send(buf []byte, to int) error {
	c.sent[to] += len(buf)
	c.links[c.rank][to] <- append([]byte(nil), buf...)
	return nil
}

func (c *chanComm) Recv(buf []byte, from int) error {
	m := <-c.links[from][c.rank]
	if len(m) != len(buf) {
		return fmt.Errorf("rank %d: a message of %d bytes from rank %d, want %d", c.rank, len(m), from, len(buf))
	}
	copy(buf, m)
	return nil
}

func (c *chanComm) Bcast(buf []byte, root int) error {
	if c.rank != root {
		return c.Recv(buf, root)
	}
	for to := range c.links {
		if to != root {
			c.links[root][to] <- append([]byte(nil), buf...)
		}
	}
	return nil
}

var errNotInChanComm = errors.New("not in chanComm")

func (c *chanComm) Gather(send, recv []byte, root int) error { return errNotInChanComm }
func (c *chanComm) Barrier() error                           { return errNotInChanComm }
