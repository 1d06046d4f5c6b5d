package ablate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/gptg/gptg/internal/quote"
)

// Stat summarises one measurement over a variant's seeds.
type Stat struct {
	Mean, SD float64 // SD is the sample standard deviation (n−1); 0 when N < 2
	N        int
}

// Summarize gives the mean and the sample standard deviation of xs.
func Summarize(xs []float64) Stat {
	s := Stat{N: len(xs)}
	switch s.N {
	case 0:
	case 1:
		s.Mean = xs[0]
	default:
		s.Mean, s.SD = stat.MeanStdDev(xs, nil) // the n−1 (unbiased) variance
	}
	return s
}

// Diff is a paired difference to the baseline: the mean over seed pairs of
// (variant − baseline) with its 95 % Student t interval. Pairing by seed
// removes what the two runs share (the data order and the initial weights
// drawn from the same seed), so the interval is narrower than comparing
// the two means would give.
type Diff struct {
	Mean   float64
	Lo, Hi float64 // the 95 % interval; valid only when N ≥ 2
	N      int     // seed pairs
}

// HasInterval says whether there were enough pairs for an interval.
func (d Diff) HasInterval() bool { return d.N >= 2 }

// IncludesZero says the interval cannot tell the variant from the baseline.
func (d Diff) IncludesZero() bool { return d.HasInterval() && d.Lo <= 0 && d.Hi >= 0 }

// PairedDiff compares x with base over the seeds both have. Seeds present
// in only one of them are left out.
func PairedDiff(x, base map[int64]float64) Diff {
	var ds []float64
	for _, seed := range slices.Sorted(maps.Keys(x)) { // one order: the same sums every time
		if b, ok := base[seed]; ok {
			ds = append(ds, x[seed]-b)
		}
	}
	s := Summarize(ds)
	d := Diff{Mean: s.Mean, N: s.N}
	if s.N >= 2 {
		half := TQuantile975(s.N-1) * s.SD / math.Sqrt(float64(s.N))
		d.Lo, d.Hi = s.Mean-half, s.Mean+half
	}
	return d
}

// TQuantile975 is the 97.5 % quantile of Student's t with df degrees of
// freedom: the half-width of a 95 % interval in standard errors.
func TQuantile975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}

// ParseSeeds reads --seeds: "" (the config's own seed), a count N (seeds
// 1..N) or a comma-separated list of distinct seeds ("1,2,42").
func ParseSeeds(s string) ([]int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if !strings.Contains(s, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("%q is neither a count from 1 to 1000 nor a list like 1,2,42", s)
		}
		seeds := make([]int64, n)
		for i := range seeds {
			seeds[i] = int64(i + 1)
		}
		return seeds, nil
	}
	var seeds []int64
	seen := map[int64]bool{}
	fields := strings.Split(s, ",")
	if len(fields) > 1000 {
		return nil, fmt.Errorf("a list of %d seeds; at most 1000", len(fields))
	}
	for _, f := range fields {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 1 {
			// A negative seed would name its run folder seed--2.
			return nil, fmt.Errorf("%s in the list is not a positive integer seed", quote.Value(f))
		}
		if seen[v] {
			return nil, fmt.Errorf("seed %d appears twice in %q", v, s)
		}
		seen[v] = true
		seeds = append(seeds, v)
	}
	return seeds, nil
}
