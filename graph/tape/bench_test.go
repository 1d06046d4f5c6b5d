package tape

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
)

// BenchmarkSampleToken is one sampled token's forward pass of the seed
// config: the batch-1, full-context graph without the loss that package
// sample runs, fed a window and read back as float64 logits, on the fused
// graph and on the unfused one.
//
//	go test ./graph/tape -run XXX -bench SampleToken -benchtime 3000x
func BenchmarkSampleToken(b *testing.B) {
	for _, path := range graphtest.Paths {
		b.Run(path.Name, func(b *testing.B) { benchmarkSampleToken(b, path.Unfused) })
	}
}

func benchmarkSampleToken(b *testing.B, unfused bool) {
	spec := config.DefaultModel()
	spec.Vocab = 65
	m, err := graph.Build(spec, graph.Options{Batch: 1, Seed: 1, Backend: graph.Backend{Unfused: unfused}})
	if err != nil {
		b.Fatal(err)
	}
	p, err := Compile(m, false)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]int, spec.Context)
	run := func() {
		for i := range x {
			x[i] = rng.IntN(spec.Vocab)
		}
		if err := p.Run(x, nil); err != nil {
			b.Fatal(err)
		}
		_ = graph.Float64s(p.Logits.Value())
	}
	for i := 0; i < 3; i++ {
		run()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkCachedToken is one sampled token through the key/value cache:
// the seed config at context 256, the cache filled to half, one Append and
// the logits read back, on the fused graph and on the unfused one.
//
//	go test ./graph/tape -run XXX -bench CachedToken -benchtime 3000x
func BenchmarkCachedToken(b *testing.B) {
	for _, path := range graphtest.Paths {
		b.Run(path.Name, func(b *testing.B) {
			spec := config.DefaultModel()
			spec.Vocab, spec.Context = 65, 256
			m, err := graph.BuildCached(spec, graph.Backend{Unfused: path.Unfused})
			if err != nil {
				b.Fatal(err)
			}
			p, err := CompileCached(m)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			var logits []float64
			for p.Len() < spec.Context/2 {
				if err := p.Append(rng.IntN(spec.Vocab)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.Truncate(spec.Context / 2)
				if err := p.Append(rng.IntN(spec.Vocab)); err != nil {
					b.Fatal(err)
				}
				logits = graph.Float64sInto(logits, p.Logits.Value())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkTrainStep is one training step (forward and backward) of a
// small model (embedding 64, 2 blocks of 4 heads, context 64, batch 8,
// float32, fused) at the vocabulary sizes of a character corpus (65), of
// a word or BPE vocabulary (11k) and of GPT-2's (50k): the sizes where
// how the targets reach the loss shows. It reports bytes allocated per
// step, the CPU time the process used per step (user + system, all
// threads: steadier than the wall time on a loaded machine) and the
// process's peak resident memory (VmHWM), so run one size per process
// (bench/targets.sh does):
//
//	go test ./graph/tape -run XXX -bench 'TrainStep/V50257$' -benchtime 5x
func BenchmarkTrainStep(b *testing.B) {
	for _, vocab := range []int{65, 11000, 50257} {
		b.Run(fmt.Sprintf("V%d", vocab), func(b *testing.B) {
			spec := config.DefaultModel()
			spec.Vocab, spec.Context, spec.Embedding, spec.Blocks, spec.Heads = vocab, 64, 64, 2, 4
			spec.Residual, spec.Norm = true, "pre"
			const batch = 8
			m, err := graph.Build(spec, graph.Options{Batch: batch, Loss: true, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			p, err := Compile(m, true)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			x, y := graphtest.RandomBatch(rand.New(rand.NewPCG(1, 2)), vocab, batch*spec.Context)
			for i := 0; i < 2; i++ {
				if err := p.Run(x, y); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			cpu := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Run(x, y); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if used := cpuTime() - cpu; used > 0 {
				b.ReportMetric(used.Seconds()*1e3/float64(b.N), "cpu-ms/op")
			}
			if hwm := peakRSS(); hwm > 0 {
				b.ReportMetric(float64(hwm)/(1<<20), "peak-MB")
			}
		})
	}
}

// peakRSS is the process's peak resident memory in bytes (VmHWM of
// /proc/self/status), or 0 where there is no such file.
func peakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the CPU time (user + system) the process has used, from
// /proc/self/stat in clock ticks of 10 ms, or 0 where there is no such file.
func cpuTime() time.Duration {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, may hold spaces):
	// utime and stime are the 12th and 13th.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat)[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkTranslationStep is one training run (forward and backward, with
// dropout) of configs/translate/en-es.toml's encoder–decoder at its batch
// shape (32 pairs, source 25, target 33; vocabularies as the built-in
// corpus gives them), on one thread, fused and unfused. Where the machine
// is shared, compare the CPU time: go test ./graph/tape -run XXX -bench
// TranslationStep -benchtime 5x, under /usr/bin/time or with -cpuprofile.
func BenchmarkTranslationStep(b *testing.B) {
	spec := graph.TranslationSpec{SrcVocab: 5193, TgtVocab: 6912, MaxLen: 33, Embedding: 128, Heads: 4,
		EncoderBlocks: 2, DecoderBlocks: 2, FFHidden: 512, Norm: "post", Positions: "sinusoidal",
		Activation: "relu", LabelSmoothing: 0.1, Dropout: 0.1, Dtype: "float32"}
	B, S, T := 32, 25, 33
	rng := rand.New(rand.NewPCG(1, 2))
	src, decIn, decTgt := make([]int, B*S), make([]int, B*T), make([]int, B*T)
	for i := range src {
		src[i] = 4 + rng.IntN(spec.SrcVocab-4)
	}
	for i := range decIn {
		decIn[i], decTgt[i] = 4+rng.IntN(spec.TgtVocab-4), 4+rng.IntN(spec.TgtVocab-4)
	}
	for _, path := range graphtest.Paths {
		b.Run(path.Name, func(b *testing.B) {
			m, err := graph.BuildTranslation(spec, graph.TranslationOptions{Batch: B, SrcLen: S, TgtLen: T, Loss: true, Dropout: true,
				Seed: 1, Backend: graph.Backend{Unfused: path.Unfused, Threads: 1}})
			if err != nil {
				b.Fatal(err)
			}
			p, err := CompileTranslation(m, true)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.SetDropout(1, uint64(i))
				if err := p.Run(src, decIn, decTgt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
