package ablate

import (
	"bytes"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette: matplotlib's "tab10", ten colours told apart easily, also in
// print; each variant also gets its own dash pattern, so eight variants
// stay distinct for readers who do not see colours well.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
}

// style gives variant k its colour and dash pattern; the dash cycle is
// shorter than the colour cycle, so no two of the first ten share both.
func style(k int) (color.RGBA, []vg.Length) {
	return palette[k%len(palette)], dashes[k%len(dashes)]
}

// curve is a variant's mean over its seeds at each logged step, with the
// sample standard deviation where two or more seeds have the step.
type curve struct {
	x, mean, sd []float64
}

// DrawnSteps sorts the steps some runs logged, each once, and keeps at
// most limit of them, evenly spaced, the first and last included: the
// steps a curve of mean ± sd over seeds is drawn at (the loss plot here,
// serve's comparison).
func DrawnSteps[S int | float64](steps []S, limit int) []S {
	slices.Sort(steps)
	steps = slices.Compact(steps)
	n := len(steps)
	if n <= limit {
		return steps
	}
	kept := make([]S, 0, limit)
	for k := range limit {
		kept = append(kept, steps[k*(n-1)/(limit-1)])
	}
	return kept
}

// maxCurveSteps bounds the steps a curve is drawn at (the picture is
// about a thousand pixels wide): at every step of three 1.65M-row runs the
// map of per-step values and the plot's points took the whole of a
// 250 MiB cgroup and the kernel killed sweep collect.
var maxCurveSteps = 4000

// meanCurve is the mean and sd over runs at each step one of them has —
// every step when there are at most maxCurveSteps, else evenly spaced
// ones among them, first and last included.
func meanCurve(runs []*Result, pick func(*Result) []point) curve {
	var steps []float64
	for _, r := range runs {
		for _, p := range pick(r) {
			steps = append(steps, p.step)
		}
	}
	steps = DrawnSteps(steps, maxCurveSteps)
	values := make([][]float64, len(steps))
	for _, r := range runs {
		for _, p := range pick(r) {
			if k, found := slices.BinarySearch(steps, p.step); found {
				values[k] = append(values[k], p.loss)
			}
		}
	}
	c := curve{x: steps}
	for k := range steps {
		s := Summarize(values[k])
		c.mean, c.sd = append(c.mean, s.Mean), append(c.sd, s.SD)
	}
	return c
}

func (c curve) xys(shift float64) plotter.XYs {
	out := make(plotter.XYs, len(c.x))
	for i := range c.x {
		out[i].X, out[i].Y = c.x[i], c.mean[i]+shift*c.sd[i]
	}
	return out
}

// LossPlot draws each variant's mean training loss over its seeds as a
// line in a band of ±1 standard deviation, and its mean test losses as
// points of the same colour. The legend sits beside the plot, not over the
// curves; the y axis has a grid line every 0.1 so that differences of 0.05
// can be read off.
func LossPlot(rows []*Row) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "gptg ablation: mean training loss over seeds (lines, band ±1 sd)\nand mean test loss (points)"
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "step"
	p.Y.Label.Text = "cross-entropy"
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(30)

	curves, maxStep := variantCurves(rows)
	lo, hi := yRange(curves, maxStep)
	if len(curves) == 0 {
		p.Title.Text = "gptg ablation: no run finished"
		lo, hi, maxStep = 0, 1, 1
	}
	p.Y.Min, p.Y.Max = math.Max(0, math.Floor(lo*10)/10-0.05), math.Ceil(hi*10)/10+0.05
	// A margin on the right keeps the final test points inside the frame.
	p.X.Min, p.X.Max = 0, maxStep*1.03
	labelEvery := 0.5
	if p.Y.Max-p.Y.Min <= 1.5 {
		labelEvery = 0.2
	}
	p.Y.Tick.Marker = gridTicks{minor: 0.1, major: labelEvery}
	p.Add(hGrid{minor: 0.1, major: labelEvery})

	var names []string
	for k, d := range curves {
		name, err := addVariant(p, &legend, k, d)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}

	const width, height = 11 * vg.Inch, 6.5 * vg.Inch
	legendWidth := 2.6 * vg.Inch
	for _, name := range names {
		if w := legend.TextStyle.Width(name) + legend.ThumbnailWidth + 0.4*vg.Inch; w > legendWidth {
			legendWidth = w
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, width-legendWidth+0.15*vg.Inch, 0, 0, -0.6*vg.Inch))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// drawnVariant is one variant's curves: its mean training loss and its mean
// test losses over its finished seeds.
type drawnVariant struct {
	row         *Row
	train, test curve
}

// variantCurves averages the curves of each variant with a finished run,
// and finds the last step any of them reaches.
func variantCurves(rows []*Row) (curves []drawnVariant, maxStep float64) {
	for _, r := range rows {
		if len(r.Finished) == 0 {
			continue
		}
		d := drawnVariant{row: r,
			train: meanCurve(r.Finished, func(r *Result) []point { return r.curve }),
			test:  meanCurve(r.Finished, func(r *Result) []point { return r.tests })}
		curves = append(curves, d)
		for _, c := range []curve{d.train, d.test} {
			if n := len(c.x); n > 0 {
				maxStep = math.Max(maxStep, c.x[n-1])
			}
		}
	}
	return curves, maxStep
}

// yRange covers every test point and the curves after their first 2 % of
// steps: the loss at step 1 (ln vocab) would squeeze everything that
// matters into a strip.
func yRange(curves []drawnVariant, maxStep float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, d := range curves {
		for i, x := range d.train.x {
			if x >= 0.02*maxStep {
				lo, hi = math.Min(lo, d.train.mean[i]-d.train.sd[i]), math.Max(hi, d.train.mean[i]+d.train.sd[i])
			}
		}
		for i := range d.test.x {
			lo, hi = math.Min(lo, d.test.mean[i]-d.test.sd[i]), math.Max(hi, d.test.mean[i]+d.test.sd[i])
		}
	}
	return lo, hi
}

// addVariant draws the k-th variant d (its band, if it has more than one
// seed, its line and its test points) and adds it to the legend under the
// name it returns.
func addVariant(p *plot.Plot, legend *plot.Legend, k int, d drawnVariant) (string, error) {
	col, dash := style(k)
	if len(d.row.Finished) > 1 {
		band, err := plotter.NewPolygon(append(d.train.xys(+1), reversed(d.train.xys(-1))...))
		if err != nil {
			return "", err
		}
		band.Color = color.NRGBA{col.R, col.G, col.B, 0x38}
		band.LineStyle.Color = color.Transparent // no outline
		p.Add(band)
	}
	line, err := plotter.NewLine(d.train.xys(0))
	if err != nil {
		return "", err
	}
	line.Color, line.Dashes, line.Width = col, dash, vg.Points(1.4)
	p.Add(line)
	pts, err := plotter.NewScatter(d.test.xys(0))
	if err != nil {
		return "", err
	}
	pts.Color = col
	pts.Shape = draw.CircleGlyph{}
	pts.Radius = vg.Points(3.5)
	p.Add(pts)
	name := d.row.Name
	if n := len(d.row.Finished); n > 1 {
		name += " (" + strconv.Itoa(n) + " seeds)"
	}
	legend.Add(name, line, pts)
	return name, nil
}

func reversed(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		out[len(xy)-1-i] = xy[i]
	}
	return out
}

// trimFloat labels a tick: 0.30000000000000004 is 0.3.
func trimFloat(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// gridTicks labels the y axis every major step and marks every minor step.
type gridTicks struct{ minor, major float64 }

func (g gridTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for i := math.Ceil(min/g.minor - 1e-9); i*g.minor <= max+1e-9; i++ {
		v := i * g.minor
		if v == 0 {
			v = 0 // not −0, which would be labelled "-0"
		}
		t := plot.Tick{Value: v}
		if r := math.Mod(math.Abs(v)+1e-9, g.major); r < 2e-9 {
			t.Label = trimFloat(v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// hGrid draws a light line at every minor step and a darker one at every
// labelled step, across the whole data area.
type hGrid struct{ minor, major float64 }

func (g hGrid) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	for _, t := range (gridTicks(g)).Ticks(p.Y.Min, p.Y.Max) {
		ls := draw.LineStyle{Color: color.Gray{0xe4}, Width: vg.Points(0.5)}
		if t.Label != "" {
			ls.Color = color.Gray{0xb8}
		}
		y := trY(t.Value)
		c.StrokeLine2(ls, c.Min.X, y, c.Max.X, y)
	}
}
