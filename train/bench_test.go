package train

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
)

// BenchmarkTrainStep is one training step of the seed config (batch 4,
// context 32, embedding 64, 2 blocks, 1 head, Q/K/V, mask, float32, the
// 65-character vocabulary of tiny-shakespeare): forward, backward, clipping
// and AdamW, as train.Run does it, on the fused graph and on the unfused
// one. B/op after warm-up is the memory one step allocates;
// bench/compare.sh measures tokens/s against the reference.
//
//	go test ./train -run XXX -bench TrainStep -benchtime 1000x
func BenchmarkTrainStep(b *testing.B) {
	for _, path := range []struct {
		name    string
		unfused bool
	}{{"fused", false}, {"unfused", true}} {
		b.Run(path.name, func(b *testing.B) { benchmarkTrainStep(b, path.unfused) })
	}
}

func benchmarkTrainStep(b *testing.B, unfused bool) {
	spec := config.DefaultModel()
	spec.Vocab = 65
	const batch = 4
	m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 1, Backend: graph.Backend{Unfused: unfused}})
	if err != nil {
		b.Fatal(err)
	}
	prog, err := graph.Compile(m, true)
	if err != nil {
		b.Fatal(err)
	}
	defer prog.Close()
	opt := &AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	s := NewStepper(prog, opt, Schedule{LR: 1e-3, MinLR: 1e-4, Warmup: 100, Total: 1 << 30}, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	n := batch * spec.Context
	x, y := make([]int, n), make([]int, n)
	next := func() {
		for i := range x {
			x[i], y[i] = rng.IntN(spec.Vocab), rng.IntN(spec.Vocab)
		}
	}
	for i := 0; i < 3; i++ { // warm-up: first-run allocations, AdamW moments
		next()
		if _, err := s.Step(i, x, y); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next()
		if _, err := s.Step(i, x, y); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tokens/s")
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
			var r metricsRow
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
