package main

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

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

// summaryPicture draws the block × head summary as two heat tables side by
// side, entropy and mean distance, every cell with its number, so that a
// head worth a closer look (--head B.H) can be picked out of 144; each
// title says what a head spreading evenly would score (evenHead).
func summaryPicture(stats [][]headStats, even headStats, title figureTitle, format string) (picture []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			picture, err = nil, fmt.Errorf("drawing the attention summary: %v", r)
		}
	}()
	blocks, heads := len(stats), len(stats[0])
	cell := 34 * vg.Length(1)
	tileW := max(220*vg.Length(1), cell*vg.Length(heads)+90)
	tileH := max(200*vg.Length(1), cell*vg.Length(blocks)+80)
	width, height := 2*tileW, tileH+titleH
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	case "svg":
		canvas = vgsvg.New(width, height)
	default:
		return nil, fmt.Errorf("cannot draw %q pictures (want one of %s)", format, strings.Join(pictureFormats, ", "))
	}
	dc := draw.New(canvas)
	drawTitle(dc, title, width, height)
	plots := [][]*plot.Plot{{
		summaryPlot(stats, fmt.Sprintf("entropy, bits (an even head: %.2f)", even.Entropy), "%.2f", func(s headStats) float64 { return s.Entropy }),
		summaryPlot(stats, fmt.Sprintf("mean distance, positions (an even head: %.1f)", even.Distance), "%.1f", func(s headStats) float64 { return s.Distance }),
	}}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, draw.Crop(dc, 0, 0, 0, -titleH))
	for i, p := range plots[0] {
		p.Draw(canvases[0][i])
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding the %s picture: %w", format, err)
	}
	return buf.Bytes(), nil
}

// summaryPlot is one heat table: blocks down (block 0 on top), heads
// across, coloured from the table's smallest to its largest value.
func summaryPlot(stats [][]headStats, title, format string, value func(headStats) float64) *plot.Plot {
	blocks, heads := len(stats), len(stats[0])
	grid := statsGrid{stats: stats, value: value}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range stats {
		for _, s := range row {
			if v := value(s); !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if !(hi > lo) {
		lo, hi = lo-0.5, lo+0.5 // one value everywhere (or none): the middle colour
	}
	colors := attentionColors()
	colors.SetMin(lo)
	colors.SetMax(hi)
	hm := plotter.NewHeatMap(grid, colors.Palette(256))
	hm.Min, hm.Max = lo, hi
	hm.NaN = color.White
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "head"
	p.Y.Label.Text = "block"
	p.X.Padding, p.Y.Padding = 0, 0
	p.Add(hm)

	labels := plotter.XYLabels{}
	dark := plotter.XYLabels{}
	for b := range stats {
		for h := range stats[b] {
			v := value(stats[b][h])
			l := fmt.Sprintf(format, v)
			xy := plotter.XY{X: float64(h), Y: float64(blocks - 1 - b)}
			// light text on the dark lower half of the colour ramp
			if math.IsNaN(v) || (v-lo)/(hi-lo) > 0.55 {
				dark.XYs, dark.Labels = append(dark.XYs, xy), append(dark.Labels, l)
			} else {
				labels.XYs, labels.Labels = append(labels.XYs, xy), append(labels.Labels, l)
			}
		}
	}
	for _, set := range []struct {
		l   plotter.XYLabels
		col color.Color
	}{{labels, color.White}, {dark, color.Black}} {
		if len(set.l.XYs) == 0 {
			continue
		}
		ls, err := plotter.NewLabels(set.l)
		if err != nil {
			panic(err) // XYs and labels are built in pairs above
		}
		for i := range ls.TextStyle {
			ls.TextStyle[i] = draw.TextStyle{Color: set.col, Font: font.From(plot.DefaultFont, 8),
				XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
		}
		p.Add(ls)
	}
	xt, yt := make(plot.ConstantTicks, heads), make(plot.ConstantTicks, blocks)
	for h := range xt {
		xt[h] = plot.Tick{Value: float64(h), Label: strconv.Itoa(h)}
	}
	for b := range yt {
		yt[b] = plot.Tick{Value: float64(blocks - 1 - b), Label: strconv.Itoa(b)}
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
	return p
}

// statsGrid presents one number of every head as a plotter.GridXYZ,
// block 0 on top.
type statsGrid struct {
	stats [][]headStats
	value func(headStats) float64
}

func (g statsGrid) Dims() (c, r int) { return len(g.stats[0]), len(g.stats) }
func (g statsGrid) Z(c, r int) float64 {
	return g.value(g.stats[len(g.stats)-1-r][c])
}
func (g statsGrid) X(c int) float64 { return float64(c) }
func (g statsGrid) Y(r int) float64 { return float64(r) }
