package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/heatmap"
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
				fmt.Fprintf(stdout, "%s (rows: %s; columns: %s)\n", p.Title, p.YName, p.XName)
				printMatrix(stdout, p.Rows, p.Cols, p.M, terminal.Width(stdout))
				fmt.Fprintln(stdout)
			}
		}
		return nil
	}
	for _, row := range panels {
		for i := range row {
			row[i].Rows, row[i].Cols = tokenLabels(row[i].Rows), tokenLabels(row[i].Cols)
		}
	}
	picture, err := drawAttention(panels, heatmap.Title{Model: path, Text: source + " → " + read}, format)
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
func translationPanels(a *translate.Attention) [][]heatmap.Panel {
	var grid [][]heatmap.Panel
	for b, heads := range a.Encoder {
		var row []heatmap.Panel
		for h, m := range heads {
			row = append(row, heatmap.Panel{M: m, Rows: a.Source, Cols: a.Source,
				Title: fmt.Sprintf("encoder block %d, head %d", b, h),
				XName: "source word looked at", YName: "source word looking"})
		}
		grid = append(grid, row)
	}
	for b := range a.Decoder {
		var self, cross []heatmap.Panel
		for h := range a.Decoder[b] {
			self = append(self, heatmap.Panel{M: a.Decoder[b][h], Rows: a.Target, Cols: a.Target,
				Title: fmt.Sprintf("decoder block %d, head %d: self", b, h),
				XName: "target word looked at", YName: "target word looking"})
			cross = append(cross, heatmap.Panel{M: a.Cross[b][h], Rows: a.Written, Cols: a.Source,
				Title: fmt.Sprintf("decoder block %d, head %d: cross", b, h),
				XName: "source word looked at", YName: "target word being written"})
		}
		grid = append(grid, self, cross)
	}
	return grid
}

// tokenLabels is tokenLabel of every word.
func tokenLabels(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = heatmap.Label(w)
	}
	return out
}
