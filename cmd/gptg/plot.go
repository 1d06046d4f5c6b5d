package main

import (
	"bytes"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gptg/gptg/internal/quote"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/train"
)

var plotCommand = command{
	summary: "draw a run's training and test loss curve",
	usage: `Usage: gptg plot RUN_DIR [--out FILE.png|FILE.svg]

Draws the run's metrics.jsonl: the training loss of every row (the mean
over the steps since the row before) as a line, the test losses as points,
against the step. Works on a run that is still training or was stopped.
gptg ablate draws several configs over seeds (its loss.png).

Flags:
  --out FILE   the picture to write, .png or .svg (default RUN_DIR/loss.png)
` + forceUsage,
	run: runPlot,
}

func runPlot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("plot needs exactly one RUN_DIR, got %d arguments", len(pos))
	}
	dir := pos[0]
	if err := checkRunDir(dir); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(dir, "loss.png")
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".png" && ext != ".svg" {
		return usagef("--out %s: the picture is .png or .svg", *out)
	}
	// The rule of every output flag (checkOutput): an existing picture
	// (PNG, SVG) may be replaced; anything else needs --force.
	if err := checkOutput("--out", *out, atomicfile.Rules{Force: *force,
		Own: atomicfile.HasPrefix("\x89PNG", "<?xml", "<svg")}); err != nil {
		return err
	}
	rows, err := train.ReadMetrics(dir)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("%s has no metrics rows yet: the first is written after train.log_every steps", filepath.Join(dir, train.MetricsFile))
	}
	pic, err := lossCurve(filepath.Base(filepath.Clean(dir)), rows, ext)
	if err != nil {
		return err
	}
	if err := writeOutput(*out, stdout, func(w io.Writer) error { _, err := w.Write(pic); return err }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d rows, up to step %d)\n", *out, len(rows), rows[len(rows)-1].Step)
	return nil
}

// checkRunDir refuses, as a usage error, a RUN_DIR argument that is not a
// run folder: missing, a file (a model, a corpus) or a folder without
// metrics.jsonl.
func checkRunDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("%s: no such run folder", quote.Name(dir))
	case !info.IsDir():
		hint := ""
		if d := filepath.Dir(dir); isRunDir(d) {
			hint = fmt.Sprintf(": give its folder, %s", quote.Name(d))
		}
		return usagef("%s is a file, not a run folder%s", quote.Name(dir), hint)
	case !isRunDir(dir):
		return usagef("%s is not a run folder: it has no %s or %s", quote.Name(dir), train.MetricsFile, train.ConfigFile)
	}
	return nil
}

// isRunDir reports whether dir holds a run's metrics.jsonl or config.toml
// (a run that has just started).
func isRunDir(dir string) bool {
	for _, name := range []string{train.MetricsFile, train.ConfigFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

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

// lossCurve draws the rows as a PNG or SVG picture.
func lossCurve(name string, rows []train.MetricsRow, ext string) ([]byte, error) {
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
