package train

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
)

// benchShapes are the shapes issue #10 measures (bench/compare.sh trains
// them against the reference): the seed config; nanoGPT's CPU recipe
// (prenorm, 4 heads, batch 12, context 64, embedding 128, 4 blocks); and
// nanoGPT's shakespeare-char shape at batch 16 (prenorm, 6 heads, context
// 256, embedding 384, 6 blocks, 10.8M parameters).
var benchShapes = []struct {
	name  string
	batch int
	spec  func() config.Model
}{
	{"seed", 4, func() config.Model { s := config.DefaultModel(); s.Vocab = 65; return s }},
	{"cpu", 12, func() config.Model { return prenorm(4, 64, 128, 4) }},
	{"10.8M", 16, func() config.Model { return prenorm(6, 256, 384, 6) }},
}

func prenorm(heads, context, embedding, blocks int) config.Model {
	s := config.DefaultModel()
	s.Vocab, s.Heads, s.Context, s.Embedding, s.Blocks = 65, heads, context, embedding, blocks
	s.Residual, s.Norm = true, "pre"
	return s
}

// BenchmarkTrainStep is one training step — forward, backward, clipping
// and AdamW, as train.Run does it — at each shape of benchShapes, on the
// fused graph with 1 thread and with every core, and on the unfused graph
// at the seed shape. B/op after warm-up is the memory one step allocates;
// bench/compare.sh measures tokens/s against the reference.
//
//	go test ./train -run XXX -bench TrainStep -benchtime 20x
func BenchmarkTrainStep(b *testing.B) {
	for _, s := range benchShapes {
		for _, threads := range []int{1, runtime.NumCPU()} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				benchmarkTrainStep(b, s.spec(), s.batch, graph.Backend{Threads: threads})
			})
		}
	}
	b.Run("seed/unfused", func(b *testing.B) {
		benchmarkTrainStep(b, benchShapes[0].spec(), benchShapes[0].batch, graph.Backend{Unfused: true})
	})
}

// newBenchStepper builds a training step of spec and a source of random batches.
func newBenchStepper(t testing.TB, spec config.Model, batch int, be graph.Backend) (*Stepper, func() ([]int, []int), func()) {
	prog, err := tape.CompileTraining(spec, graph.Options{Batch: batch, Loss: true, Seed: 1, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	opt := &AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	s := NewStepper(prog, opt, Schedule{LR: 1e-3, MinLR: 1e-4, Warmup: 100, Total: 1 << 30}, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	n := batch * spec.Context
	x, y := make([]int, n), make([]int, n)
	next := func() ([]int, []int) {
		fillTokens(rng, spec.Vocab, x, y)
		return x, y
	}
	return s, next, func() { prog.Close() }
}

func benchmarkTrainStep(b *testing.B, spec config.Model, batch int, be graph.Backend) {
	s, next, done := newBenchStepper(b, spec, batch, be)
	defer done()
	for i := 0; i < 3; i++ { // warm-up: first-run allocations, AdamW moments
		x, y := next()
		if _, err := s.Step(i, x, y); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, y := next()
		if _, err := s.Step(i, x, y); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch*spec.Context)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEvalBatch is one run of the forward-only test-loss graph as
// the product evaluates — at config.Model.EvalBatch's batch, which covers
// 8 training batches per run at the seed shape and 1 at nanoGPT's two
// shapes (the few batches after the last whole run go through the
// training batch's graph) — at each shape of benchShapes, with 1 thread
// and with every core. Issue #10 asks that a token of test loss cost at
// most a third of a training token: tokens/s here at least 3× those of
// BenchmarkTrainStep at the same shape and thread count.
//
//	go test ./train -run XXX -bench '(EvalBatch|TrainStep)/(cpu|10.8M)/' -benchtime 4x
func BenchmarkEvalBatch(b *testing.B) {
	for _, s := range benchShapes {
		for _, threads := range []int{1, runtime.NumCPU()} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				spec := s.spec()
				batch := spec.EvalBatch(s.batch, math.MaxInt)
				m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 1, Backend: graph.Backend{Threads: threads}})
				if err != nil {
					b.Fatal(err)
				}
				prog, err := tape.Compile(m, false)
				if err != nil {
					b.Fatal(err)
				}
				defer prog.Close()
				x, y := make([]int, batch*spec.Context), make([]int, batch*spec.Context)
				fillTokens(rand.New(rand.NewPCG(3, 4)), spec.Vocab, x, y)
				for range 2 { // warm-up: first-run allocations
					if err := prog.Run(x, y); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for range b.N {
					if err := prog.Run(x, y); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch*spec.Context)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(batch/s.batch), "batches/run")
			})
		}
	}
}

// fillTokens fills x and y (inputs and targets) with tokens drawn from a
// vocabulary of vocab, in place, so that a step's batch allocates nothing.
func fillTokens(rng *rand.Rand, vocab int, x, y []int) {
	for i := range x {
		x[i], y[i] = rng.IntN(vocab), rng.IntN(vocab)
	}
}

// TestStepAllocations: after warm-up a training step allocates at most
// 1 MB (issue #10), at the seed shape and at nanoGPT's CPU-recipe shape,
// with one thread and with two. (The 10.8M shape is in BenchmarkTrainStep:
// its step takes seconds.)
func TestStepAllocations(t *testing.T) {
	for _, s := range benchShapes[:2] {
		for _, threads := range []int{1, 2} {
			stepper, next, done := newBenchStepper(t, s.spec(), s.batch, graph.Backend{Threads: threads})
			for i := 0; i < 3; i++ {
				x, y := next()
				if _, err := stepper.Step(i, x, y); err != nil {
					t.Fatal(err)
				}
			}
			const steps = 5
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < steps; i++ {
				x, y := next()
				if _, err := stepper.Step(3+i, x, y); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			done()
			perStep := float64(after.TotalAlloc-before.TotalAlloc) / steps
			t.Logf("%s, %d thread(s): %.1f KB allocated per step", s.name, threads, perStep/1024)
			if perStep > 1<<20 {
				t.Errorf("%s, %d thread(s): %.0f bytes allocated per step, more than 1 MB", s.name, threads, perStep)
			}
		}
	}
}

// BenchmarkLongRunMemory trains the seed config for 30,000 steps through
// train.Run (metrics, evaluations and checkpoints included, on the 6 KB
// test corpus, so it needs nothing beside the repository) and reports the
// live heap and the resident set at step 1,000 and at step 30,000 from
// metrics.jsonl: a leak shows as the second pair outgrowing the first.
// Not a CI test: it takes about a minute.
//
//	go test ./train -run XXX -bench LongRunMemory -benchtime 1x
func BenchmarkLongRunMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		c := config.Default()
		c.Data.Path = "../testdata/tiny.txt"
		c.Train.MaxSteps, c.Train.Epochs = 30000, 1000
		c.Train.LogEvery, c.Train.EvalEvery, c.Train.Out = 1000, 10000, dir
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
		if _, err := Run(context.Background(), c, Options{}); err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, MetricsFile))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r MetricsRow
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				b.Fatal(err)
			}
			switch r.Step {
			case 1000:
				b.ReportMetric(r.HeapMB, "heapMB@1k")
				b.ReportMetric(r.RSSMB, "rssMB@1k")
			case 30000:
				b.ReportMetric(r.HeapMB, "heapMB@30k")
				b.ReportMetric(r.RSSMB, "rssMB@30k")
			}
		}
		f.Close()
	}
}
