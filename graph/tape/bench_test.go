package tape

import (
	"math/rand/v2"
	"testing"

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
