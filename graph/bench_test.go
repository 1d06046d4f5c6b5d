package graph

import (
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/config"
)

// BenchmarkSampleToken is one sampled token's forward pass of the seed
// config: the batch-1, full-context graph without the loss that package
// sample runs, fed a window and read back as float64 logits, on the fused
// graph and on the unfused one.
//
//	go test ./graph -run XXX -bench SampleToken -benchtime 3000x
func BenchmarkSampleToken(b *testing.B) {
	for _, path := range paths {
		b.Run(path.name, func(b *testing.B) { benchmarkSampleToken(b, path.unfused) })
	}
}

func benchmarkSampleToken(b *testing.B, unfused bool) {
	spec := config.DefaultModel()
	spec.Vocab = 65
	m, err := Build(spec, Options{Batch: 1, Seed: 1, Backend: Backend{Unfused: unfused}})
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
		_ = Float64s(p.Logits.Value())
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
//	go test ./graph -run XXX -bench CachedToken -benchtime 3000x
func BenchmarkCachedToken(b *testing.B) {
	for _, path := range paths {
		b.Run(path.name, func(b *testing.B) {
			spec := config.DefaultModel()
			spec.Vocab, spec.Context = 65, 256
			m, err := BuildIncremental(spec, Backend{Unfused: path.unfused})
			if err != nil {
				b.Fatal(err)
			}
			p, err := CompileIncremental(m)
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
				logits = Float64sInto(logits, p.Logits.Value())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
