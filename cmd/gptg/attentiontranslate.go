package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/terminal"
	"github.com/gptg/gptg/translate"
)

// translationAttention is gptg attention for an encoder–decoder: the
// encoder's self-attention, the decoder's self-attention and the
// cross-attention alignment of a sentence and its translation — the
// model's own greedy one, or target — per block and head.
func translationAttention(path, text, target, format, out string, be graph.Backend, stdout io.Writer) error {
	graphs := decodeGraphs(1, false, true)
	m, err := openTranslation(path, "drawing the attention of", graphs)
	if err != nil {
		return err
	}
	tr := translate.NewTranslator(m, be)
	tr.Check = checkLonger(m, "drawing the attention of", graphs)
	a, err := tr.Attention(text, target)
	if errors.Is(err, translate.ErrInput) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	for _, set := range [][][]matrix{a.Encoder, a.Decoder, a.Cross} {
		for _, heads := range set {
			for _, h := range heads {
				for _, w := range h.W {
					if math.IsNaN(w) || math.IsInf(w, 0) {
						return fmt.Errorf("%s: the model's attention weights are not finite numbers (a corrupt file, or a training that diverged)", path)
					}
				}
			}
		}
	}
	source, read := strings.Join(a.Source[:len(a.Source)-1], " "), strings.Join(a.Target[1:], " ")
	kind := "given"
	if a.Translated {
		kind = "the model's greedy translation"
	}
	panels := translationPanels(a)
	if format == "text" {
		fmt.Fprintf(stdout, "source: %s\ntarget (%s): %s\n\n", source, kind, read)
		for _, row := range panels {
			for _, p := range row {
				fmt.Fprintf(stdout, "%s (rows: %s; columns: %s)\n", p.title, p.yName, p.xName)
				printMatrix(stdout, p.rows, p.cols, p.m, terminal.Width(stdout))
				fmt.Fprintln(stdout)
			}
		}
		return nil
	}
	for _, row := range panels {
		for i := range row {
			row[i].rows, row[i].cols = tokenLabels(row[i].rows), tokenLabels(row[i].cols)
		}
	}
	picture, err := attentionPicture(panels, figureTitle{model: path, text: source + " → " + read}, format)
	if err != nil {
		return err
	}
	if err := writeOutput(out, stdout, func(w io.Writer) error { _, err := w.Write(picture); return err }); err != nil {
		return err
	}
	wrote(stdout, out, ": encoder %d, decoder %d×2 blocks × %d heads over %d source and %d target positions",
		len(a.Encoder), len(a.Decoder), m.Spec.Heads, len(a.Source), len(a.Target))
	return nil
}

// translationPanels lays the three attentions out as rows of heads: the
// encoder's blocks, then each decoder block's self-attention and its
// cross-attention.
func translationPanels(a *translate.Attention) [][]panel {
	var grid [][]panel
	for b, heads := range a.Encoder {
		var row []panel
		for h, m := range heads {
			row = append(row, panel{m: m, rows: a.Source, cols: a.Source,
				title: fmt.Sprintf("encoder block %d, head %d", b, h),
				xName: "source word looked at", yName: "source word looking"})
		}
		grid = append(grid, row)
	}
	for b := range a.Decoder {
		var self, cross []panel
		for h := range a.Decoder[b] {
			self = append(self, panel{m: a.Decoder[b][h], rows: a.Target, cols: a.Target,
				title: fmt.Sprintf("decoder block %d, head %d: self", b, h),
				xName: "target word looked at", yName: "target word looking"})
			cross = append(cross, panel{m: a.Cross[b][h], rows: a.Written, cols: a.Source,
				title: fmt.Sprintf("decoder block %d, head %d: cross", b, h),
				xName: "source word looked at", yName: "target word being written"})
		}
		grid = append(grid, self, cross)
	}
	return grid
}

// tokenLabels is tokenLabel of every word.
func tokenLabels(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = tokenLabel(w)
	}
	return out
}
