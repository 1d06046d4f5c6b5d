package serve

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMeanBandThins: a comparison's band is the mean and sd over the runs
// at each step they logged — every step up to maxBandSteps of them, else
// evenly spaced steps among them, first and last included (at every step
// of a 1.65M-row run it would hold 591 MB). Checked against the
// mean and sd computed here from the runs' rows.
func TestMeanBandThins(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var runs []columns
	for r := range 3 {
		var rows []row
		for step := 1 + r; step <= 5000; step += 1 + r { // runs log at different steps
			rows = append(rows, row{Step: step, Loss: rng.Float64()})
		}
		runs = append(runs, toColumns(rows))
	}
	want := func(step int) (mean, sd float64, n int) {
		var xs []float64
		for _, c := range runs {
			for i, s := range c.Step {
				if s == step {
					xs = append(xs, c.Loss[i])
				}
			}
		}
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		if len(xs) > 1 {
			for _, x := range xs {
				sd += (x - mean) * (x - mean)
			}
			sd = math.Sqrt(sd / float64(len(xs)-1))
		}
		return mean, sd, len(xs)
	}
	loss := func(c columns, i int) (float64, bool) { return c.Loss[i], true }
	for _, limit := range []int{100000, 700} {
		maxBandSteps = limit
		b := meanBand(runs, loss)
		wantLen := min(5000, limit)
		if len(b.Step) != wantLen || b.Step[0] != 1 || b.Step[len(b.Step)-1] != 5000 {
			t.Fatalf("limit %d: %d steps from %v to %v; want %d from 1 to 5000", limit, len(b.Step), b.Step[0], b.Step[len(b.Step)-1], wantLen)
		}
		for k, st := range b.Step {
			if k > 0 && st <= b.Step[k-1] {
				t.Fatalf("limit %d: steps not increasing at %d", limit, k)
			}
			m, sd, n := want(int(st))
			if n != b.N[k] || math.Abs(m-b.Mean[k]) > 1e-12 || math.Abs(sd-b.SD[k]) > 1e-12 {
				t.Fatalf("limit %d, step %v: mean %v sd %v n %d; want %v %v %d", limit, st, b.Mean[k], b.SD[k], b.N[k], m, sd, n)
			}
		}
	}
	maxBandSteps = 4000
}
