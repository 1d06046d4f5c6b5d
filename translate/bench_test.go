package translate

import (
	"bufio"
	"os"
	"strconv"
	"testing"

	"github.com/gptg/gptg/graph"
)

// BenchmarkGreedy translates the lines of $GPTG_BENCH_SENTENCES with the
// model $GPTG_BENCH_MODEL, one sentence at a time, greedily: one
// iteration is every line. Skipped without them. GPTG_BENCH_NOCACHE=1
// decodes without the cache; GPTG_BENCH_THREADS=N runs on N threads.
func BenchmarkGreedy(b *testing.B) {
	model, text := os.Getenv("GPTG_BENCH_MODEL"), os.Getenv("GPTG_BENCH_SENTENCES")
	if model == "" || text == "" {
		b.Skip("set GPTG_BENCH_MODEL (a translation model file) and GPTG_BENCH_SENTENCES (a file of sentences)")
	}
	m, err := Load(model)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(text)
	if err != nil {
		b.Fatal(err)
	}
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	f.Close()
	threads := 1 // GPTG_BENCH_THREADS=N: N threads
	if n, err := strconv.Atoi(os.Getenv("GPTG_BENCH_THREADS")); err == nil && n > 0 {
		threads = n
	}
	tr := NewTranslator(m, graph.Backend{Threads: threads})
	tr.Recompute = os.Getenv("GPTG_BENCH_NOCACHE") == "1"
	for _, l := range lines { // build every graph once
		if _, err := tr.Translate(l, Options{Beam: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, l := range lines {
			if _, err := tr.Translate(l, Options{Beam: 1}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(lines))/b.Elapsed().Seconds(), "sentences/s")
}
