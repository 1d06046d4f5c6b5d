package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gptg/gptg/sample"
)

// gridAbove is the number of heads (blocks × heads) above which gptg
// attention shows the block × head summary instead of every head's map:
// 16 maps still read side by side, GPT-2's 144 are a wall of stamps.
const gridAbove = 16

// headStats is sample.HeadStats: one head's entropy and mean distance.
type headStats = sample.HeadStats

// parseHead reads a --head BLOCK.HEAD, both counted from 0.
func parseHead(s string, blocks, heads int) (int, int, error) {
	bs, hs, ok := strings.Cut(s, ".")
	b, errB := strconv.Atoi(bs)
	h, errH := strconv.Atoi(hs)
	switch {
	case !ok || errB != nil || errH != nil:
		return 0, 0, usagef("--head %q: want BLOCK.HEAD, such as 0.3 for block 0's head 3", s)
	case b < 0 || b >= blocks || h < 0 || h >= heads:
		return 0, 0, usagef("--head %s: the model has blocks 0–%d and heads 0–%d", s, blocks-1, heads-1)
	}
	return b, h, nil
}

// evenHead is what a head that spreads its weights evenly over every
// position it may see scores over n tokens: the yardstick a learned head
// is read against (below it in entropy: it picks; in distance: it looks
// near).
func evenHead(n int, causal bool) headStats {
	m := sample.Matrix{N: n, W: make([]float64, n*n)}
	for i := 0; i < n; i++ {
		k := n
		if causal {
			k = i + 1
		}
		for j := 0; j < k; j++ {
			m.W[i*n+j] = 1 / float64(k)
		}
	}
	return sample.Stats(m)
}

// printSummary prints the block × head summary as two tables, one row per
// block and one column per head: the entropy in bits, then the mean
// distance in positions (sample.HeadStats), and what an even head scores.
func printSummary(w io.Writer, stats [][]headStats, tokens int, causal bool) {
	heads := len(stats[0])
	table := func(title, format string, value func(headStats) float64) {
		fmt.Fprintln(w, title)
		var line strings.Builder
		line.WriteString("        ")
		for h := 0; h < heads; h++ {
			fmt.Fprintf(&line, " %6s", fmt.Sprintf("h%d", h))
		}
		fmt.Fprintln(w, line.String())
		for b, row := range stats {
			line.Reset()
			fmt.Fprintf(&line, "block %2d", b)
			for _, s := range row {
				fmt.Fprintf(&line, " %6s", fmt.Sprintf(format, value(s)))
			}
			fmt.Fprintln(w, line.String())
		}
	}
	fmt.Fprintf(w, "%d blocks × %d heads over %d tokens, each number the mean over the positions that look\n", len(stats), heads, tokens)
	table("entropy of a position's weights, bits (0: one position; log2 of k: k positions evenly)", "%.2f", func(s headStats) float64 { return s.Entropy })
	fmt.Fprintln(w)
	table("mean distance looked back, positions (weights × |query − key|)", "%.1f", func(s headStats) float64 { return s.Distance })
	even := evenHead(tokens, causal)
	fmt.Fprintf(w, "\na head that spreads evenly over all it may see: %.2f bits, %.1f positions\n", even.Entropy, even.Distance)
}
