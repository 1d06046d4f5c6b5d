package ablate

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gptg/gptg/internal/atomicfile"
)

// writeSummary writes summary.md, summary.csv and loss.png into dir.
func writeSummary(dir string, rows []*Row) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, "summary.md"), []byte(Markdown(rows))); err != nil {
		return err
	}
	c, err := CSV(rows)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "summary.csv"), c); err != nil {
		return err
	}
	png, err := LossPlot(rows)
	if err != nil {
		return fmt.Errorf("loss plot: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, "loss.png"), png)
}

var header = []string{"name", "differs", "params", "steps", "wall_s", "tokens_per_s",
	"train_loss", "test_loss", "prefix_only_test_loss", "sample", "error"}

// cells formats one row; numbers are blank when the run failed before them.
func cells(r *Row) []string {
	f := func(v float64, prec int) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	i := func(v int) string {
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	errText := ""
	if r.Err != nil {
		errText = r.Err.Error()
	}
	return []string{r.Name, strings.Join(r.Differs, " "), i(r.Params), i(r.Steps), f(r.WallSecs, 1),
		f(r.TokensPerS, 0), f(r.TrainLoss, 4), f(r.TestLoss, 4), f(r.PrefixLoss, 4), r.Sample, errText}
}

// CSV is the table as comma-separated values, one row per config.
func CSV(rows []*Row) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(header)
	for _, r := range rows {
		w.Write(cells(r))
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// Markdown is the table for people: samples on one line, newlines shown as ⏎.
func Markdown(rows []*Row) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header[:len(header)-1], " | ") + " |\n")
	b.WriteString(strings.Repeat("|---", len(header)-1) + "|\n")
	esc := strings.NewReplacer("|", `\|`, "\n", "⏎", "\r", "", "`", "'")
	var failed []string
	plain := false
	for _, r := range rows {
		c := cells(r)
		if r.PrefixIsPlain {
			c[8] += "¹"
			plain = true
		}
		if r.Sample != "" {
			c[9] = "`" + esc.Replace(r.Sample) + "`"
		}
		if r.Err != nil {
			c[9] = "**failed**"
			failed = append(failed, fmt.Sprintf("- %s: %s", r.Name, esc.Replace(r.Err.Error())))
		}
		for k := range c[:len(c)-1] {
			if k != 9 {
				c[k] = esc.Replace(c[k])
			}
		}
		b.WriteString("| " + strings.Join(c[:len(c)-1], " | ") + " |\n")
	}
	if plain {
		b.WriteString("\n¹ causal model: every position already sees only its prefix, so the prefix-only loss is the test loss.\n")
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed runs:\n" + strings.Join(failed, "\n") + "\n")
	}
	return b.String()
}

// LossPlot draws every run's training-loss curve on one plot, with its
// test losses as points of the same colour.
func LossPlot(rows []*Row) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "gptg ablation: training loss (lines) and test loss (points)"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "cross-entropy"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	k := 0
	for _, r := range rows {
		if len(r.curve) == 0 {
			continue
		}
		// Seven colours, then the same colours dashed.
		col := plotutil.Color(k)
		line, err := plotter.NewLine(xys(r.curve))
		if err != nil {
			return nil, err
		}
		line.Color = col
		line.Dashes = plotutil.Dashes(k / 7)
		k++
		line.Width = vg.Points(1.2)
		p.Add(line)
		p.Legend.Add(r.Name, line)
		if len(r.tests) > 0 {
			pts, err := plotter.NewScatter(xys(r.tests))
			if err != nil {
				return nil, err
			}
			pts.Color = col
			pts.Shape = draw.CircleGlyph{}
			pts.Radius = vg.Points(3)
			p.Add(pts)
		}
	}
	if k == 0 {
		// Nothing trained; still a valid image that says so.
		p.Title.Text = "gptg ablation: no run finished"
	}
	w, err := p.WriterTo(10*vg.Inch, 6*vg.Inch, "png")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func xys(pts []point) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i].X, out[i].Y = p.step, p.loss
	}
	return out
}
