package heatmap

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"

	"github.com/gptg/gptg/graph"
)

// TestAttentionColors: neither end of the scale is the page's white (a
// weight of 1 must not vanish into the background), and the colours grow
// lighter with the weight, so the order reads in greyscale too.
func TestAttentionColors(t *testing.T) {
	colors := attentionColors()
	prev := -1.0
	for i := 0; i <= 20; i++ {
		c, err := colors.At(float64(i) / 20)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := c.RGBA()
		light := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff
		if light <= prev {
			t.Errorf("weight %.2f: lightness %.3f does not rise from %.3f", float64(i)/20, light, prev)
		}
		if min(r, g, b) > 0xe000 {
			t.Errorf("weight %.2f is drawn nearly white (%v)", float64(i)/20, c)
		}
		prev = light
	}
}

// TestPicture: a figure of two panels is a PNG that decodes to the size
// its tiles take, and one of more cells than a PNG may hold is refused
// with a SizeError before any drawing, naming how many tokens fit.
func TestPicture(t *testing.T) {
	labels := []string{"a", "b", "c"}
	m := graph.Matrix{N: 3, W: []float64{1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5}}
	b, err := Picture(Square([][]graph.Matrix{{m, m}}, labels), Title{Model: "m.safetensors", Text: "abc"}, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w <= h {
		t.Errorf("a row of two panels is %d×%d pixels: want it wider than high", w, h)
	}

	const n = 200 // 4 panels of 200² cells: 160,000 > 65,536
	big := graph.Matrix{N: n, W: make([]float64, n*n)}
	many := make([]string, n)
	for i := range many {
		many[i] = "x"
	}
	_, err = Picture(Square([][]graph.Matrix{{big, big}, {big, big}}, many), Title{}, "png")
	var size *SizeError
	if !errors.As(err, &size) || !strings.Contains(err.Error(), "a png of 4 heatmaps holding 160000 cells") || !strings.Contains(err.Error(), "tokens") {
		t.Fatalf("got %v, want a SizeError", err)
	}
}
