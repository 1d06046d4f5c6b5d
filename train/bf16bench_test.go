package train

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/fused"
	"github.com/gptg/gptg/internal/cputime"
)

// BenchmarkBF16Step is one training step of model.dtype "bfloat16"
// against float32's, at nanoGPT's CPU shape and the 10.8M shape, on 1 and
// 2 threads: both steppers built in one process, run alternately (b.N
// rounds of 2 steps each, after 2 of warm-up), so that a busy machine
// slows both alike. It reports each dtype's median CPU time and wall time
// per step over the rounds and their ratios (float32 / bfloat16: the
// speed-up). CPU time is what a shared machine does not stretch; on 2
// threads it includes the time the pool's workers spin between ops.
//
//	go test ./train -run XXX -bench BF16Step -benchtime 5x
func BenchmarkBF16Step(b *testing.B) {
	for _, s := range benchShapes[1:] {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				benchmarkBF16Step(b, s.spec(), s.batch, threads)
			})
		}
	}
}

func benchmarkBF16Step(b *testing.B, spec config.Model, batch, threads int) {
	b.Logf("bfloat16 kernel: %s", fused.BF16Kernel())
	dtypes := []string{"float32", config.DtypeBF16}
	var steps [2]func()
	for i, dt := range dtypes {
		spec.Dtype = dt
		s, next, done := newBenchStepper(b, spec, batch, graph.Backend{Threads: threads})
		defer done()
		n := 0
		steps[i] = func() {
			x, y := next()
			if _, err := s.Step(n, x, y); err != nil {
				b.Fatal(err)
			}
			n++
		}
		steps[i]()
		steps[i]()
	}
	const perRound = 2
	var cpu, wall [2][]float64
	b.ResetTimer()
	for range b.N {
		for i, step := range steps {
			c0, w0 := cputime.Process(), time.Now()
			for range perRound {
				step()
			}
			cpu[i] = append(cpu[i], (cputime.Process()-c0).Seconds()/perRound)
			wall[i] = append(wall[i], time.Since(w0).Seconds()/perRound)
		}
	}
	b.StopTimer()
	median := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	for i, dt := range dtypes {
		b.ReportMetric(median(cpu[i]), dt+"-cpu-s/step")
		b.ReportMetric(median(wall[i]), dt+"-wall-s/step")
	}
	ratios := func(f, bf []float64) float64 {
		r := make([]float64, len(f))
		for k := range f {
			r[k] = f[k] / bf[k]
		}
		return median(r)
	}
	b.ReportMetric(ratios(cpu[0], cpu[1]), "cpu-speedup")
	b.ReportMetric(ratios(wall[0], wall[1]), "wall-speedup")
}
