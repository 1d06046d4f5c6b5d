package heatmap

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gptg/gptg/sample"
)

// Summary draws the block × head summary as two heat tables side by
// side, entropy and mean distance, every cell with its number, so that a
// head worth a closer look (--head B.H) can be picked out of 144; each
// title says what a head spreading evenly would score (even).
func Summary(stats [][]sample.HeadStats, even sample.HeadStats, title Title, format string) (picture []byte, err error) {
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
	canvas, err := newCanvas(format, width, height)
	if err != nil {
		return nil, err
	}
	dc := draw.New(canvas)
	drawTitle(dc, title, width, height)
	plots := [][]*plot.Plot{{
		summaryPlot(stats, fmt.Sprintf("entropy, bits (an even head: %.2f)", even.Entropy), "%.2f", func(s sample.HeadStats) float64 { return s.Entropy }),
		summaryPlot(stats, fmt.Sprintf("mean distance, positions (an even head: %.1f)", even.Distance), "%.1f", func(s sample.HeadStats) float64 { return s.Distance }),
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
func summaryPlot(stats [][]sample.HeadStats, title, format string, value func(sample.HeadStats) float64) *plot.Plot {
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
	stats [][]sample.HeadStats
	value func(sample.HeadStats) float64
}

func (g statsGrid) Dims() (c, r int) { return len(g.stats[0]), len(g.stats) }

func (g statsGrid) Z(c, r int) float64 {
	return g.value(g.stats[len(g.stats)-1-r][c])
}

func (g statsGrid) X(c int) float64 { return float64(c) }

func (g statsGrid) Y(r int) float64 { return float64(r) }
