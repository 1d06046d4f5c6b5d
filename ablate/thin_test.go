package ablate

import (
	"math"
	"testing"
)

// TestCurvesAreThinned: a run's curve keeps every point while it has at
// most 2·maxCurveSteps, then the points at steps that are multiples of a
// doubling stride and its last one (every point of three 1.65M-row runs
// gets sweep collect OOM-killed in a 250 MiB cgroup); the
// plot's mean curve is drawn at no more than maxCurveSteps steps, its
// means and sds those of the runs at each of them.
func TestCurvesAreThinned(t *testing.T) {
	var small, big thinned
	for step := 1; step <= 100; step++ {
		small.add(step, float64(step))
	}
	if p := small.points(); len(p) != 100 || p[0].step != 1 || p[99].step != 100 {
		t.Fatalf("a short curve: %d points, want all 100", len(p))
	}
	const rows = 1_000_003
	for step := 1; step <= rows; step++ {
		big.add(step, float64(step))
	}
	p := big.points()
	if len(p) > 2*maxCurveSteps+1 || len(p) < maxCurveSteps || p[len(p)-1].step != rows {
		t.Fatalf("a long curve: %d points ending at %v; want %d to %d, the last at %d", len(p), p[len(p)-1].step, maxCurveSteps, 2*maxCurveSteps+1, rows)
	}
	for _, q := range p[:len(p)-1] {
		if int(q.step)%big.stride != 0 || q.loss != q.step {
			t.Fatalf("point %+v: not at a multiple of the stride %d, or not its own", q, big.stride)
		}
	}

	// Three seeds logging at different steps; the curve at ≤ maxCurveSteps
	// steps, each the mean and sd of the seeds there.
	runs := make([]*Result, 3)
	for s := range runs {
		runs[s] = &Result{}
		for step := 1 + s; step <= 30000; step += 1 + s {
			runs[s].curve = append(runs[s].curve, point{float64(step), math.Sin(float64(step * (s + 1)))})
		}
	}
	c := meanCurve(runs, func(r *Result) []point { return r.curve })
	if len(c.x) != maxCurveSteps || c.x[0] != 1 || c.x[len(c.x)-1] != 30000 {
		t.Fatalf("mean curve: %d steps from %v to %v", len(c.x), c.x[0], c.x[len(c.x)-1])
	}
	for k, x := range c.x {
		var xs []float64
		for _, r := range runs {
			for _, q := range r.curve {
				if q.step == x {
					xs = append(xs, q.loss)
				}
			}
		}
		want := Summarize(xs)
		if math.Abs(want.Mean-c.mean[k]) > 1e-12 || math.Abs(want.SD-c.sd[k]) > 1e-12 {
			t.Fatalf("step %v: mean %v sd %v; want %v %v", x, c.mean[k], c.sd[k], want.Mean, want.SD)
		}
	}
}
