//go:build mpi

// Command mpistep measures the inputs of docs/performance.md's scaling
// model of gptg train --distributed: the exchange of a step's gradients
// (train.ExchangeSeconds: the chain of float32 sums and the broadcast,
// no compute) at the 10.8M and GPT-2 124M shapes, and, on rank 0 after
// the exchanges, one shard's compute (forward and backward) at those
// shapes on one thread:
//
//	go build -tags mpi -o /tmp/mpistep ./bench/mpistep
//	mpirun -np 2 /tmp/mpistep -reps 5 -steps 0   # the exchange
//	mpirun -np 1 /tmp/mpistep -reps 0 -steps 2   # the compute, alone
//
// (a rank that waits in MPI spins on its core, so the compute is timed
// in a job of one rank).
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/mpi"
	"github.com/gptg/gptg/train"
)

type shape struct {
	name  string
	batch int // sequences per shard
	spec  config.Model
}

func shapes() []shape {
	m := config.DefaultModel()
	m.Vocab, m.Heads, m.Context, m.Embedding, m.Blocks = 65, 6, 256, 384, 6
	m.Residual, m.Norm = true, "pre"
	g := config.DefaultModel() // GPT-2 small, as hf's import makes it
	g.Vocab, g.Context, g.Embedding, g.Blocks, g.Heads = 50257, 1024, 768, 12, 12
	g.QKV, g.Mask, g.OutProj, g.Residual = true, true, true, true
	g.Norm, g.Activation, g.FFMult = "pre", "gelu", 4
	g.TieEmbeddings, g.Bias, g.FinalNorm = true, true, true
	g.Init, g.Dtype = "gpt2", "float32"
	return []shape{{"10.8M", 16, m}, {"124M", 1, g}}
}

func main() {
	reps := flag.Int("reps", 5, "timed exchanges per shape (after one warm-up); 0: none")
	steps := flag.Int("steps", 2, "timed shards per shape on rank 0 (after one warm-up)")
	flag.Parse()
	c, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpistep:", err)
		os.Exit(2)
	}
	for _, s := range shapes() {
		if *reps == 0 {
			break
		}
		params := int(s.spec.ParamCount())
		secs, err := train.ExchangeSeconds(c, params, c.Size(), *reps+1)
		secs = secs[1:] // the first touches the buffers' pages
		if err != nil {
			fmt.Fprintln(os.Stderr, "mpistep:", err)
			c.Abort(1)
		}
		if c.Rank() == 0 {
			slices.Sort(secs)
			fmt.Printf("exchange %s: %d float32 gradients, %d ranks: median %.3f s (%.3f–%.3f over %d)\n",
				s.name, params, c.Size(), secs[len(secs)/2], secs[0], secs[len(secs)-1], len(secs))
		}
	}
	if c.Rank() == 0 && *steps > 0 {
		for _, s := range shapes() {
			compute(s, *steps)
		}
	}
	c.Finalize()
}

// compute times one shard (forward and backward) of s on one thread,
// after a warm-up step: wall and CPU seconds (user + system: steadier on a
// shared machine).
func compute(s shape, steps int) {
	prog, err := tape.CompileTraining(s.spec, graph.Options{Batch: s.batch, Loss: true, Seed: 1, Backend: graph.Backend{Threads: 1}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpistep:", err)
		os.Exit(1)
	}
	defer prog.Close()
	opt := &train.AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	st := train.NewStepper(prog, opt, train.Schedule{LR: 1e-4, MinLR: 1e-5, Warmup: 10, Total: 1000}, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	n := s.batch * s.spec.Context
	x, y := make([]int, n), make([]int, n)
	for i := range x {
		x[i], y[i] = rng.IntN(s.spec.Vocab), rng.IntN(s.spec.Vocab)
	}
	if _, err := st.Step(0, x, y); err != nil { // warm-up
		fmt.Fprintln(os.Stderr, "mpistep:", err)
		os.Exit(1)
	}
	var wall, cpuSecs float64
	for range steps {
		w, c := time.Now(), cpu()
		if err := prog.Run(x, y); err != nil {
			fmt.Fprintln(os.Stderr, "mpistep:", err)
			os.Exit(1)
		}
		wall += time.Since(w).Seconds()
		cpuSecs += cpu() - c
	}
	k := float64(steps)
	fmt.Printf("compute %s (%d×%d tokens per shard, 1 thread): shard forward+backward %.2f s wall, %.2f s CPU\n",
		s.name, s.batch, s.spec.Context, wall/k, cpuSecs/k)
}

func cpu() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
