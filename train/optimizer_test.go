package train

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
)

// TestGoldenTrajectory replays each golden file's 4 AdamW steps (warmup 2,
// cosine to min_lr, clipping at 1) in float64 and compares the learning rate,
// loss and pre-clip gradient norm of every step and the parameters after the
// last one with the reference: relative error ≤ 1e-9, on the fused graph
// and on the unfused one (subtests fused/…, unfused/…).
func TestGoldenTrajectory(t *testing.T) { goldenTrajectories(t, golden.Dir()) }

// TestGoldenTrajectoryNanoGPT replays nanoGPT's own model.py and
// configure_optimizers (weight decay on matrices only) from
// testdata/nanogpt/golden.
func TestGoldenTrajectoryNanoGPT(t *testing.T) { goldenTrajectories(t, "../testdata/nanogpt/golden") }

func goldenTrajectories(t *testing.T, dir string) {
	cases, err := golden.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []struct {
		name    string
		unfused bool
	}{{"fused", false}, {"unfused", true}} {
		t.Run(path.name, func(t *testing.T) { goldenTrajectory(t, cases, path.unfused) })
	}
}

func goldenTrajectory(t *testing.T, cases []*golden.Case, unfused bool) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			const tol = 1e-9
			spec := c.Model
			spec.Dtype = "float64"
			m, err := graph.Build(spec, graph.Options{Batch: c.Batch, Loss: true, Backend: graph.Backend{Unfused: unfused}})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := tape.Compile(m, true)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			for _, p := range m.Params {
				if err := p.SetFloat64s(c.Params[p.Name].Data); err != nil {
					t.Fatal(err)
				}
			}
			o := c.Optimizer
			sched := Schedule{LR: o.Schedule.LR, MinLR: o.Schedule.MinLR, Warmup: o.Schedule.Warmup, Total: o.Schedule.Total}
			opt := &AdamW{Beta1: o.Betas[0], Beta2: o.Betas[1], Eps: o.Eps, WeightDecay: o.Schedule.WeightDecay}
			if o.Schedule.Decay == "matrices" {
				opt.SkipDecay = SkipDecayBelow2D(m.Params)
			}
			s := NewStepper(prog, opt, sched, o.Schedule.Clip)
			for _, want := range o.Trajectory {
				r, err := s.Step(want.Step, golden.Flat(c.Inputs), golden.Flat(c.Targets))
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []struct {
					what      string
					got, want float64
				}{{"lr", r.LR, want.LR}, {"loss", r.Loss, want.Loss}, {"grad_norm", r.GradNorm, want.GradNorm}} {
					if e := math.Abs(q.got-q.want) / math.Abs(q.want); !(e <= tol) {
						t.Errorf("step %d %s: %.17g, want %.17g (relative error %.3g)", want.Step, q.what, q.got, q.want, e)
					}
				}
			}
			for _, p := range m.Params {
				got := graph.Float64s(p.Node.Value())
				if e := golden.RelErr(got, o.ParamsAfter[p.Name], 0); !(e <= tol) {
					t.Errorf("%s after %d steps: relative error %.3g", p.Name, len(o.Trajectory), e)
				}
			}
		})
	}
}

func TestScheduleMatchesReference(t *testing.T) {
	// Values of gptref.py lr_at(step, 1e-3, 1000, 100, 1e-4).
	s := Schedule{LR: 1e-3, MinLR: 1e-4, Warmup: 100, Total: 1000}
	for _, c := range []struct {
		step int
		want float64
	}{
		{0, 1e-5}, {49, 5e-4}, {99, 1e-3}, {100, 1e-3},
		{550, 1e-4 + 0.5*9e-4*(1+math.Cos(math.Pi*0.5))}, {1000, 1e-4}, {5000, 1e-4},
	} {
		if got := s.At(c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("At(%d) = %.17g, want %.17g", c.step, got, c.want)
		}
	}
	// Warmup longer than the run: never divides by zero, stays in warmup.
	if got := (Schedule{LR: 1, MinLR: 0, Warmup: 10, Total: 5}).At(4); got != 0.5 {
		t.Errorf("warmup past total: %v", got)
	}
}

// TestNoamSchedule checks schedule = "noam" against the paper's eq. 3,
// lrate = d^-0.5 · min(n^-0.5, n · warmup^-1.5) with n = step+1, evaluated
// in 40-digit decimal arithmetic (Python's decimal module) for the
// paper's d = 512, warmup = 4000 and for a seed-sized model.
func TestNoamSchedule(t *testing.T) {
	for _, c := range []struct {
		d, warmup, n int
		want         float64
	}{
		{512, 4000, 1, 1.7469281074217108e-07},
		{512, 4000, 2000, 0.00034938562148434214},
		{512, 4000, 4000, 0.00069877124296868428}, // the peak, d^-0.5 · warmup^-0.5
		{512, 4000, 4001, 0.00069868391293735296},
		{512, 4000, 100000, 0.00013975424859373687},
		{64, 400, 1, 1.5625e-05},
		{64, 400, 400, 0.0062500000000000003},
		{64, 400, 10000, 0.00125},
	} {
		// LR, MinLR and Total must not enter it.
		s := Schedule{Kind: "noam", LR: 3, MinLR: 2, Total: 7, Warmup: c.warmup, Dim: c.d}
		if got := s.At(c.n - 1); math.Abs(got-c.want) > 1e-15*c.want {
			t.Errorf("d=%d warmup=%d n=%d: At(%d) = %.17g, want %.17g", c.d, c.warmup, c.n, c.n-1, got, c.want)
		}
	}
	// Rising to the peak at n = warmup, falling after.
	s := Schedule{Kind: "noam", Warmup: 100, Dim: 64}
	for step := 1; step < 1000; step++ {
		rising := step+1 <= 100
		if up := s.At(step) > s.At(step-1); up != rising {
			t.Fatalf("step %d: At = %g after %g, want rising = %v", step, s.At(step), s.At(step-1), rising)
		}
	}
}

// TestNoamRun: train.schedule = "noam" reaches the optimiser — a run's
// metrics log the paper's rate at every logged step.
func TestNoamRun(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(t, dir)
	c.Train.Schedule = "noam"
	c.Train.MaxSteps = 30
	if _, err := Run(context.Background(), c, Options{}); err != nil {
		t.Fatal(err)
	}
	logged := rows(t, dir)
	if len(logged) < 3 {
		t.Fatalf("%d metrics rows", len(logged))
	}
	for _, r := range logged {
		step := int(r["step"].(float64))
		n := float64(step) // a row's step counts the updates done; its last one is the paper's n = step
		want := math.Pow(8, -0.5) * math.Min(math.Pow(n, -0.5), n*math.Pow(5, -1.5))
		if got := r["lr"].(float64); math.Abs(got-want) > 1e-15 {
			t.Errorf("step %d: lr %.17g, want %.17g", step, got, want)
		}
	}
}

func TestClipGlobalNorm(t *testing.T) {
	a, b := []float64{3, 0}, []float32{0, 4}
	norm := ClipGlobalNorm([]any{a, b}, 1)
	if norm != 5 {
		t.Fatalf("norm %v, want 5", norm)
	}
	coef := 1 / (5 + 1e-6)
	if math.Abs(a[0]-3*coef) > 1e-15 || math.Abs(float64(b[1])-4*coef) > 1e-6 {
		t.Fatalf("clipped to %v %v", a, b)
	}
	c := []float64{0.3, 0.4}
	if n := ClipGlobalNorm([]any{c}, 1); math.Abs(n-0.5) > 1e-15 || c[0] != 0.3 {
		t.Fatalf("a norm under the clip must leave gradients alone: %v %v", n, c)
	}
}

func TestAdamWOneStepByHand(t *testing.T) {
	// One step from zero moments: m̂ = g, v̂ = g², so p ← p(1−lr·wd) − lr·g/(|g|+eps).
	w := []float64{1, -2}
	g := []float64{0.5, -0.25}
	o := &AdamW{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	if err := o.Step(fakeParams(w, g)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{1*(1-0.001) - 0.1*0.5/(0.5+1e-8), -2*(1-0.001) + 0.1*0.25/(0.25+1e-8)} {
		if math.Abs(w[i]-want) > 1e-12 {
			t.Errorf("w[%d] = %.15g, want %.15g", i, w[i], want)
		}
	}
	if o.Steps != 1 {
		t.Errorf("Steps = %d", o.Steps)
	}
}

type fakeVG struct{ w, g *tensor.Dense }

func (f fakeVG) Value() G.Value         { return f.w }
func (f fakeVG) Grad() (G.Value, error) { return f.g, nil }

func fakeParams(w, g []float64) []G.ValueGrad {
	return []G.ValueGrad{fakeVG{
		tensor.New(tensor.WithShape(len(w)), tensor.WithBacking(w)),
		tensor.New(tensor.WithShape(len(g)), tensor.WithBacking(g)),
	}}
}

// TestAdamWSplitGivesSameBits runs three steps of AdamW over parameters of
// both dtypes and awkward sizes, once in one piece and once split into
// uneven ranges run in reverse order, and requires the same weights and
// moments to the bit: the promise that lets the update run on every core.
func TestAdamWSplitGivesSameBits(t *testing.T) {
	sizes := []int{1, 3, 65, 255, 256, 257, 1000, 3}
	run := func(split func(n, work int, f func(lo, hi int))) (weights [][]float64, o *AdamW) {
		rng := rand.New(rand.NewPCG(8, 8))
		var params []G.ValueGrad
		for i, n := range sizes {
			w, g := make([]float64, n), make([]float64, n)
			for j := range w {
				w[j], g[j] = rng.NormFloat64(), rng.NormFloat64()
			}
			if i%2 == 0 {
				params = append(params, fakeParams(w, g)...)
				continue
			}
			w32, g32 := make([]float32, n), make([]float32, n)
			for j := range w {
				w32[j], g32[j] = float32(w[j]), float32(g[j])
			}
			params = append(params, fakeVG{
				tensor.New(tensor.WithShape(n), tensor.WithBacking(w32)),
				tensor.New(tensor.WithShape(n), tensor.WithBacking(g32)),
			})
		}
		o = &AdamW{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Split: split,
			SkipDecay: []bool{false, true, false}}
		for range 3 {
			if err := o.Step(params); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range params {
			weights = append(weights, graph.Float64s(p.Value()))
		}
		return weights, o
	}
	uneven := func(n, _ int, f func(lo, hi int)) {
		cuts := []int{n, n * 2 / 3, 1, 0}
		for i := 0; i+1 < len(cuts); i++ {
			f(min(cuts[i+1], n), cuts[i])
		}
	}
	w1, o1 := run(nil)
	w2, o2 := run(uneven)
	if !reflect.DeepEqual(w1, w2) || !reflect.DeepEqual(o1.M, o2.M) || !reflect.DeepEqual(o1.V, o2.V) {
		t.Errorf("the split update computed other bits than the whole one")
	}
}

// TestClipSplitGivesSameBits clips gradients of both dtypes, several of
// them longer than a chunk, in one piece and split into uneven ranges run
// in reverse order, and requires the same norm and clipped entries to the
// bit; and the norm within 1e-12 of a plain sum in float64.
func TestClipSplitGivesSameBits(t *testing.T) {
	sizes := []int{3, clipChunk + 5, 1, 3*clipChunk - 1, 100}
	grads := func() []any {
		rng := rand.New(rand.NewPCG(9, 9))
		var gs []any
		for i, n := range sizes {
			g64, g32 := make([]float64, n), make([]float32, n)
			for j := range g64 {
				g64[j] = rng.NormFloat64()
				g32[j] = float32(g64[j])
			}
			if i%2 == 0 {
				gs = append(gs, g64)
			} else {
				gs = append(gs, g32)
			}
		}
		return gs
	}
	want := 0.0
	for _, g := range grads() {
		for _, v := range graph.Float64s(tensor.New(tensor.WithBacking(g))) {
			want += v * v
		}
	}
	want = math.Sqrt(want)
	uneven := func(n, _ int, f func(lo, hi int)) {
		cuts := []int{n, n * 2 / 3, 1, 0}
		for i := 0; i+1 < len(cuts); i++ {
			f(min(cuts[i+1], n), cuts[i])
		}
	}
	var results [2][]any
	var norms [2]float64
	for i, split := range []func(n, work int, f func(lo, hi int)){nil, uneven} {
		c := clipper{split: split}
		results[i] = grads()
		norms[i] = c.clip(results[i], 1)
	}
	if norms[0] != norms[1] || !reflect.DeepEqual(results[0], results[1]) {
		t.Errorf("split clipping computed other bits: norms %v", norms)
	}
	if math.Abs(norms[0]-want) > 1e-12*want {
		t.Errorf("norm %v, want %v", norms[0], want)
	}
}
