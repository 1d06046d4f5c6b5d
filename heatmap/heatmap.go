// Package heatmap draws the attention figure of gptg attention: a grid of
// heatmaps of attention weights (blocks × heads, or the encoder–decoder's
// three kinds of attention), the tokens as tick labels, one colour scale,
// as PNG or SVG; and for models of many heads the block × head summary of
// their entropies and mean distances (summary.go).
package heatmap

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/memlimit"
)

// Sizes of the attention figure, in points. A tile grows with the number
// of tokens so that every tick label keeps room for itself.
const (
	minTile      = 220 * vg.Length(1)
	tilePerToken = 16 * vg.Length(1)
	tileMargin   = 70 * vg.Length(1) // title, axis labels and short tick labels
	perLabelRune = 6 * vg.Length(1)  // room for longer tick labels (words)
	colorBarW    = 80 * vg.Length(1)
	titleH       = 28 * vg.Length(1) // the figure's title above the grid
)

// attentionColors is the colour scale of the heatmaps, 0 to 1: viridis's
// sequential ramp, dark purple through teal to yellow, interpolated at
// linearly rising lightness. Neither end is white, so a weight of 1 never
// looks like the page around it, and the order of the colours reads the
// same in greyscale.
func attentionColors() palette.ColorMap {
	controls := []color.Color{
		color.RGBA{0x44, 0x01, 0x54, 0xff},
		color.RGBA{0x3b, 0x52, 0x8b, 0xff},
		color.RGBA{0x21, 0x91, 0x8c, 0xff},
		color.RGBA{0x5e, 0xc9, 0x62, 0xff},
		color.RGBA{0xfd, 0xe7, 0x25, 0xff},
	}
	colors, err := moreland.NewLuminance(controls)
	if err != nil {
		panic(err) // the controls above are fixed and rise in lightness
	}
	colors.SetMin(0)
	colors.SetMax(1)
	return colors
}

// Formats are the formats attention can draw, by file extension.
var Formats = []string{"png", "svg"}

// Panel is one heatmap of the attention figure: a head's weights, the
// labels of its rows (the positions looking) and columns (the positions
// looked at), its title and its axes' names.
type Panel struct {
	M            graph.Matrix
	Rows, Cols   []string
	Title        string
	XName, YName string
}

// Square are the panels of a decoder-only model: maps[b][h] over
// one sequence of tokens, labels on both axes.
func Square(maps [][]graph.Matrix, labels []string) [][]Panel {
	grid := make([][]Panel, len(maps))
	for b := range maps {
		for h, m := range maps[b] {
			grid[b] = append(grid[b], Panel{M: m, Rows: labels, Cols: labels, Title: fmt.Sprintf("block %d, head %d", b, h),
				XName: "key: the position looked at", YName: "query: the position looking"})
		}
	}
	return grid
}

// Picture draws a grid of heatmaps (for a decoder-only model,
// rows = blocks, columns = heads, Square) with the tokens as tick
// labels, one colour scale for all and title on top, and returns it
// encoded as format ("png" or "svg").
//
// Every heatmap uses the fixed range 0..1 rather than its own min and max:
// weights are probabilities, and a shared scale lets heads be compared at a
// glance (a head that spreads its attention looks pale next to one that
// locks onto a single token).
func Picture(panels [][]Panel, title Title, format string) (picture []byte, err error) {
	// gonum/plot reports some drawing problems by panicking; a figure that
	// cannot be drawn is a run-time error, never a crash of the CLI.
	defer func() {
		if r := recover(); r != nil {
			picture, err = nil, fmt.Errorf("drawing the attention heatmaps: %v", r)
		}
	}()
	rows, cols := len(panels), 0
	if rows > 0 {
		cols = len(panels[0])
	}
	if rows == 0 || cols == 0 {
		return nil, fmt.Errorf("the model has no attention to draw (%d blocks)", rows)
	}

	if err := checkPictureSize(panels, format); err != nil {
		return nil, err
	}

	colors := attentionColors()
	pal := colors.Palette(256)

	plots := make([][]*plot.Plot, rows)
	longest, most := 0, 0
	for b := range panels {
		plots[b] = make([]*plot.Plot, cols)
		for h, pn := range panels[b] {
			plots[b][h] = heatmapPlot(pn, pal)
			for _, l := range append(append([]string(nil), pn.Rows...), pn.Cols...) {
				longest = max(longest, len([]rune(l)))
			}
			most = max(most, len(pn.Rows), len(pn.Cols))
		}
	}

	tile := max(minTile, tileMargin+perLabelRune*vg.Length(longest)+tilePerToken*vg.Length(most))
	width, height := tile*vg.Length(cols)+colorBarW, tile*vg.Length(rows)+titleH
	canvas, err := newCanvas(format, width, height)
	if err != nil {
		return nil, err
	}
	dc := draw.New(canvas)
	drawTitle(dc, title, width, height)

	grid := draw.Crop(dc, 0, -colorBarW, 0, -titleH)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	// Align gives every heatmap the same data area even when the tick
	// labels of one column are wider than another's.
	canvases := plot.Align(plots, tiles, grid)
	for b := range plots {
		for h := range plots[b] {
			plots[b][h].Draw(canvases[b][h])
		}
	}

	// The colour bar takes the right-hand strip, at most one tile high so
	// that it stays a legend rather than a column of its own.
	barHeight := min(height-titleH, tile)
	bar := draw.Crop(dc, width-colorBarW, 0, height-titleH-barHeight, -titleH)
	colorBarPlot(colors).Draw(draw.Crop(bar, vg.Millimeter*2, -vg.Millimeter*2, vg.Millimeter*8, -vg.Millimeter*8))

	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding the %s picture: %w", format, err)
	}
	return buf.Bytes(), nil
}

// Title is what the attention figure is of: a model file and a text.
type Title struct{ Model, Text string }

// lines returns the title shortened step by step: the full one first, then
// with the model's path cut to its last two elements, then with the text
// cut as well, so that the caller can take the first that fits.
func (f Title) lines() []string {
	format := func(model, text string) string {
		return fmt.Sprintf("attention of %s over %s", model, strconv.Quote(text))
	}
	out := []string{format(f.Model, f.Text)}
	model := f.Model
	if parts := strings.Split(filepath.ToSlash(model), "/"); len(parts) > 2 {
		model = "…/" + strings.Join(parts[len(parts)-2:], "/")
		out = append(out, format(model, f.Text))
	}
	for r := []rune(f.Text); len(r) > 1; {
		r = r[:len(r)-1]
		out = append(out, format(model, string(r)+"…"))
	}
	return out
}

// drawTitle writes the title along the top of the figure, from the left,
// as much of it as fits the figure's width. (From the left, not centred:
// SVG text is placed by its start, and a viewer's wider substitute font
// then runs into the free fifth on the right instead of off both edges.)
func drawTitle(dc draw.Canvas, title Title, width, height vg.Length) {
	sty := draw.TextStyle{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, 12),
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
	room := width * 4 / 5
	lines := title.lines()
	line := lines[len(lines)-1]
	for _, l := range lines {
		if sty.Width(l) <= room {
			line = l
			break
		}
	}
	dc.FillText(sty, vg.Point{X: vg.Millimeter * 4, Y: height - vg.Millimeter*3}, line)
}

// heatmapPlot is one head's heatmap: the x axis is the position looked at,
// the y axis the position that looks, read from the top as in the text
// tables, so a causal model shows a lower-left triangle.
func heatmapPlot(pn Panel, pal palette.Palette) *plot.Plot {
	// hm.Rasterized stays false: it would scale a tiny n×n image up with
	// interpolation and blur the cells into each other. Drawn as
	// rectangles, each cell stays sharp and the seams read as a grid.
	m := pn.M
	hm := plotter.NewHeatMap(flipped{m}, pal)
	hm.Min, hm.Max = 0, 1
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text = pn.XName
	p.Y.Label.Text = pn.YName
	p.X.Padding, p.Y.Padding = 0, 0
	p.Add(hm)

	n := m.N
	xt, yt := make(plot.ConstantTicks, len(pn.Cols)), make(plot.ConstantTicks, len(pn.Rows))
	rotate := false
	for j, l := range pn.Cols {
		xt[j] = plot.Tick{Value: float64(j), Label: l}
		rotate = rotate || len([]rune(l)) > 2
	}
	for i, l := range pn.Rows {
		yt[i] = plot.Tick{Value: float64(n - 1 - i), Label: l}
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
	if rotate { // words would overlap side by side; stand them up
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	return p
}

// colorBarPlot is the legend: which colour stands for which weight.
func colorBarPlot(colors palette.ColorMap) *plot.Plot {
	p := plot.New()
	p.Add(colorBar{colors})
	p.HideX()
	p.Y.Padding = 0
	p.Y.Label.Text = "weight"
	return p
}

// colorBar draws the colour scale as barSteps filled bands, each reaching
// a little into the next so that no seam shows between them. (gonum's
// ColorBar embeds a raster image instead, which some SVG viewers leave out.)
type colorBar struct{ colors palette.ColorMap }

const barSteps = 128

func (b colorBar) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x0, x1 := trX(0), trX(1)
	for i := 0; i < barSteps; i++ {
		lo, hi := float64(i)/barSteps, float64(i+1)/barSteps
		col, err := b.colors.At((lo + hi) / 2)
		if err != nil {
			continue // cannot happen: the value is within 0..1
		}
		y0, y1 := trY(lo), trY(hi)
		if i < barSteps-1 {
			y1 += (y1 - y0) / 2 // overlap the next band
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
}

func (colorBar) DataRange() (xmin, xmax, ymin, ymax float64) { return 0, 1, 0, 1 }

// flipped presents an attention graph.Matrix as a plotter.GridXYZ. The plot's y
// grows upwards, so grid row r is graph.Matrix row n−1−r: position 0 ends up on
// top, where a reader of the table expects it.
type flipped struct{ m graph.Matrix }

func (f flipped) Dims() (c, r int)   { return f.m.Cols(), f.m.N }
func (f flipped) Z(c, r int) float64 { return f.m.At(f.m.N-1-r, c) }
func (f flipped) X(c int) float64    { return float64(c) }
func (f flipped) Y(r int) float64    { return float64(r) }

var visibleSpace = strings.NewReplacer(" ", "·", "\n", "¶")

// Label shows a token so that it can be read on an axis: a space and
// a newline get a stand-in the plot's font has a glyph for (a BPE piece's
// leading space too: " the" is "·the"), other control characters their Go
// escape, the rest stay as they are.
func Label(tok string) string {
	tok = visibleSpace.Replace(tok)
	if strings.TrimSpace(tok) == "" || strings.ContainsFunc(tok, func(r rune) bool { return r < ' ' }) {
		q := strconv.Quote(tok)
		return q[1 : len(q)-1]
	}
	return tok
}

// maxPictureCells bounds the heatmap cells of one picture. Every cell is a
// rectangle drawn by gonum/plot, and a Panel's side grows with its tokens:
// on a Zen 5 core a .png of 16 panels over 128 tokens (262,144 cells) took
// 69 s and 1 GB, one over 256 tokens more than two minutes and GBs, and an
// imported GPT-2 (144 heads, 1,024 tokens) would need 275 GB. An .svg is
// cheaper (128 tokens: 11 s, 130 MB, a 24 MB file).
var maxPictureCells = map[string]int{"png": 65536, "svg": 262144}

// pictureCellBytes is the memory one cell takes while a picture is drawn,
// by which maxPictureCells is lowered where the process may not take that
// much (ulimit -v, a cgroup). Measured at the bounds, 4 heads: a .png over
// 128 tokens grew the process by 507 MB (RSS) and 400 MB (VmPeak), an
// .svg over 256 tokens by 150 MB and 300 MB.
var pictureCellBytes = map[string]float64{"png": 8 << 10, "svg": 1200}

// checkPictureSize refuses, before any drawing, a picture of more cells
// than maxPictureCells (or than the process may still draw), saying how
// many tokens would fit.
func checkPictureSize(panels [][]Panel, format string) error {
	cells, count, square := 0, 0, true
	for _, row := range panels {
		for _, pn := range row {
			cells += len(pn.Rows) * len(pn.Cols)
			count++
			square = square && len(pn.Rows) == len(pn.Cols)
		}
	}
	limit, ok := maxPictureCells[format]
	if !ok {
		return nil
	}
	bound := memlimit.Cap(float64(limit)*pictureCellBytes[format], 1)
	limit = min(limit, int(bound.Bytes/pictureCellBytes[format]))
	if cells <= limit {
		return nil
	}
	// Under a process limit, the tokens that fit the next run too (its
	// headroom may be a little less).
	fits := limit
	if bound.Limit != "" {
		fits = int(bound.Safe() / pictureCellBytes[format])
	}
	advice := "a shorter --text"
	if fit := int(math.Sqrt(float64(fits) / float64(count))); square && count > 0 && fit > 0 {
		advice = fmt.Sprintf("a --text of at most %d tokens", fit)
	}
	if bound.Limit != "" {
		return sizeErrorf("a %s of %d heatmaps holding %d cells takes about %s to draw, more than this process may still use (under %s: %d cells): give %s, --format text for the numbers, or give the process more memory",
			format, count, cells, config.FormatBytes(float64(cells)*pictureCellBytes[format]), bound.Limit, limit, advice)
	}
	return sizeErrorf("a %s of %d heatmaps holding %d cells is more than one picture can draw in reasonable time and memory (%d cells for %s): give %s, or --format text for the numbers", format, count, cells, limit, format, advice)
}

// SizeError is Picture's refusal of a picture too large to draw: the
// command line's to change (fewer tokens, another format), not a failure.
type SizeError struct{ msg string }

func (e *SizeError) Error() string { return e.msg }

func sizeErrorf(format string, args ...any) error {
	return &SizeError{fmt.Sprintf(format, args...)}
}

// newCanvas is a picture of format ("png" or "svg") and that size.
func newCanvas(format string, width, height vg.Length) (vg.CanvasWriterTo, error) {
	switch format {
	case "png":
		return vgimg.PngCanvas{Canvas: vgimg.New(width, height)}, nil
	case "svg":
		// Fonts are named, not embedded (that would add 650 KB): a
		// viewer without Liberation substitutes its own, which is why the
		// title keeps a margin (drawTitle).
		return vgsvg.New(width, height), nil
	}
	return nil, fmt.Errorf("cannot draw %q pictures (want one of %s)", format, strings.Join(Formats, ", "))
}
