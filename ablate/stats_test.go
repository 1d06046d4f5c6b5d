package ablate

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The 97.5 % quantiles of Student's t, from any printed table.
func TestTQuantile975(t *testing.T) {
	for df, want := range map[int]float64{1: 12.7062, 2: 4.3027, 4: 2.7764, 9: 2.2622, 29: 2.0452} {
		if got := TQuantile975(df); !near(got, want, 5e-4) {
			t.Errorf("t(0.975, %d) = %.5f, want %.4f", df, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	// Mean 5; squared deviations sum to 32, so sd = sqrt(32/7).
	s := Summarize([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if s.N != 8 || !near(s.Mean, 5, 1e-12) || !near(s.SD, math.Sqrt(32.0/7), 1e-12) {
		t.Errorf("got %+v", s)
	}
	if s := Summarize([]float64{3}); s.N != 1 || s.Mean != 3 || s.SD != 0 {
		t.Errorf("one value: %+v", s)
	}
}

func TestPairedDiff(t *testing.T) {
	// Differences 2, 3, 4 (seed 9 has no partner and is left out): mean 3,
	// sd 1, so the interval is 3 ± t(0.975, 2)/sqrt(3) = 3 ± 2.48414.
	d := PairedDiff(map[int64]float64{1: 3, 2: 5, 3: 7, 9: 100}, map[int64]float64{1: 1, 2: 2, 3: 3})
	if d.N != 3 || !near(d.Mean, 3, 1e-12) || !near(d.Lo, 0.51586, 1e-4) || !near(d.Hi, 5.48414, 1e-4) || d.IncludesZero() {
		t.Errorf("got %+v", d)
	}
	// Differences −1, 1, 3: mean 1, sd 2, half-width 4.3027·2/sqrt(3) = 4.9683.
	d = PairedDiff(map[int64]float64{1: 0, 2: 2, 3: 4}, map[int64]float64{1: 1, 2: 1, 3: 1})
	if !near(d.Lo, 1-4.9683, 1e-3) || !near(d.Hi, 1+4.9683, 1e-3) || !d.IncludesZero() {
		t.Errorf("got %+v", d)
	}
	if got := diffText(d, false); !strings.HasSuffix(got, "includes 0") || !strings.HasPrefix(got, "+1.0000 [−3.968, +5.968]") {
		t.Errorf("diffText = %q", got)
	}
	// One pair: a difference but no interval.
	d = PairedDiff(map[int64]float64{1: 2}, map[int64]float64{1: 1.5})
	if d.N != 1 || d.HasInterval() || d.IncludesZero() || diffText(d, false) != "+0.5000 (1 pair, no interval)" {
		t.Errorf("one pair: %+v %q", d, diffText(d, false))
	}
}

func TestParseSeeds(t *testing.T) {
	for in, want := range map[string]string{"": "[]", "3": "[1 2 3]", "1,2,42": "[1 2 42]", " 7 , 3": "[7 3]"} {
		got, err := ParseSeeds(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-2", "x", "1,1", "1,,2", "1,0", "1,-2", "1001"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("ParseSeeds(%q) accepted", bad)
		}
	}
}

func TestRunNameAndPlan(t *testing.T) {
	for path, want := range map[string]string{"configs/ablation/3-qkv.toml": "3-qkv", "a/x.y.toml": "x.y", "plain": "plain"} {
		if got, err := RunName(path); err != nil || got != want {
			t.Errorf("RunName(%q) = %q, %v", path, got, err)
		}
	}
	for _, bad := range []string{"...toml", ".toml", "x/..toml", "..", ".hidden.toml", "a/\x01.toml"} {
		if name, err := RunName(bad); err == nil {
			t.Errorf("RunName(%q) = %q, accepted", bad, name)
		}
	}
	specs, err := Plan([]string{"c/a.toml", "c/b.toml"}, []int64{1, 2}, "out")
	if err != nil || len(specs) != 4 || specs[1].Dir != "out/b/seed-1" || specs[2].Variant != "a" || specs[2].Seed != 2 {
		t.Errorf("Plan: %v %+v", err, specs)
	}
	if specs, _ := Plan([]string{"c/a.toml"}, nil, "out"); len(specs) != 1 || specs[0].Dir != "out/a" || specs[0].Seed != 0 {
		t.Errorf("Plan without seeds: %+v", specs)
	}
	if _, err := Plan([]string{"c/a.toml", "d/a.toml"}, nil, "out"); err == nil || !strings.Contains(err.Error(), "both give the run name") {
		t.Errorf("duplicate names: %v", err)
	}
}

// TestPairedDiffIsOneSum: the differences are summed in seed order, not in
// Go's random map order, so the same runs give the same bits every time
// (these magnitudes make float addition visibly order-dependent).
func TestPairedDiffIsOneSum(t *testing.T) {
	x, base := map[int64]float64{}, map[int64]float64{}
	for s := int64(1); s <= 24; s++ {
		x[s], base[s] = math.Pow(10, float64(s%9))*(1+float64(s)/7), float64(s)/3
	}
	first := PairedDiff(x, base)
	for range 50 {
		if d := PairedDiff(x, base); d != first {
			t.Fatalf("PairedDiff gave %+v, then %+v", first, d)
		}
	}
}
