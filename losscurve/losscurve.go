// Package losscurve draws the picture of gptg plot: one run's training
// loss as a line and its test losses as points, against the step.
package losscurve

import (
	"bytes"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gptg/gptg/train"
)

// plotBins is the number of bins thin keeps two points of: a few per
// pixel column of the 880-pixel-wide picture.
const plotBins = 2000

// thin keeps, of each of bins runs of consecutive points, the lowest and
// the highest (in their order), so a spike stays visible: drawing a curve
// of every row of a long run's metrics (1.65M rows) took 90 s and 1 GB
// for a picture 880 pixels wide.
func thin(xy plotter.XYs, bins int) plotter.XYs {
	if len(xy) <= 2*bins {
		return xy
	}
	out := make(plotter.XYs, 0, 2*bins)
	for b := range bins {
		run := xy[b*len(xy)/bins : (b+1)*len(xy)/bins]
		lo, hi := 0, 0
		for i, p := range run {
			if p.Y < run[lo].Y {
				lo = i
			}
			if p.Y > run[hi].Y {
				hi = i
			}
		}
		out = append(out, run[min(lo, hi)])
		if lo != hi {
			out = append(out, run[max(lo, hi)])
		}
	}
	return out
}

// Draw draws the rows of the run name as a PNG picture, or an SVG one
// when ext is ".svg".
func Draw(name string, rows []train.MetricsRow, ext string) ([]byte, error) {
	p := plot.New()
	p.Title.Text = name + ": training loss (line) and test loss (points)"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "cross-entropy"
	var trainXY, testXY plotter.XYs
	for _, r := range rows {
		trainXY = append(trainXY, plotter.XY{X: float64(r.Step), Y: r.Loss})
		if r.TestLoss != nil {
			testXY = append(testXY, plotter.XY{X: float64(r.Step), Y: *r.TestLoss})
		}
	}
	trainXY, testXY = thin(trainXY, plotBins), thin(testXY, plotBins)
	line, err := plotter.NewLine(trainXY)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = color.RGBA{0x1f, 0x77, 0xb4, 0xff}, vg.Points(1.5)
	p.Add(plotter.NewGrid(), line)
	p.Legend.Add("training loss", line)
	if len(testXY) > 0 {
		pts, err := plotter.NewScatter(testXY)
		if err != nil {
			return nil, err
		}
		pts.Color, pts.Shape, pts.Radius = color.RGBA{0xd6, 0x27, 0x28, 0xff}, draw.CircleGlyph{}, vg.Points(3.5)
		p.Add(pts)
		p.Legend.Add("test loss", pts)
	}
	p.Legend.Top = true
	const width, height = 8 * vg.Inch, 4.5 * vg.Inch
	var b bytes.Buffer
	if ext == ".svg" {
		c := vgsvg.New(width, height)
		p.Draw(draw.New(c))
		_, err = c.WriteTo(&b)
	} else {
		c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))
		p.Draw(draw.New(c))
		_, err = (vgimg.PngCanvas{Canvas: c}).WriteTo(&b)
	}
	return b.Bytes(), err
}
