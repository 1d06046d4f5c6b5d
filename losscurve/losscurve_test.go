package losscurve

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/gptg/gptg/train"
)

// TestThinKeepsSpikes: a curve of more than two points per bin keeps, of
// each bin, its lowest and highest point in their order, so a spike of one
// row among a million stays in the picture; a short curve stays whole.
func TestThinKeepsSpikes(t *testing.T) {
	xy := make(plotter.XYs, 1_000_000)
	for i := range xy {
		xy[i] = plotter.XY{X: float64(i), Y: 1}
	}
	xy[123_457].Y = 50
	out := thin(xy, plotBins)
	if len(out) > 2*plotBins {
		t.Fatalf("%d points, want at most %d", len(out), 2*plotBins)
	}
	found := false
	for i, p := range out {
		found = found || p.Y == 50 && p.X == 123_457
		if i > 0 && p.X <= out[i-1].X {
			t.Fatalf("point %d at x %v after x %v: order lost", i, p.X, out[i-1].X)
		}
	}
	if !found {
		t.Error("the spike at row 123457 was thinned away")
	}
	if short := thin(xy[:10], plotBins); len(short) != 10 {
		t.Errorf("a curve of 10 points kept %d", len(short))
	}
}

// TestDraw: the rows give a PNG, or an SVG document for ".svg".
func TestDraw(t *testing.T) {
	test := 2.5
	rows := []train.MetricsRow{{Step: 10, Loss: 3}, {Step: 20, Loss: 2.7, TestLoss: &test}}
	b, err := Draw("run", rows, ".png")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Errorf("not a PNG: %v", err)
	}
	b, err = Draw("run", rows, ".svg")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ XMLName xml.Name }
	if err := xml.Unmarshal(b, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Errorf("not SVG (%v, root %q)", err, doc.XMLName.Local)
	}
}
