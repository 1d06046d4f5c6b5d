package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/heatmap"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/terminal"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/translate"
)

var attentionCommand = command{
	summary: "show the attention weights of every block and head over a text",
	usage: `Usage: gptg attention MODEL.safetensors|RUN_DIR --text TEXT [--head B.H | --summary] [--target TEXT] [--out FILE.png|FILE.svg] [--format text|png|svg]

Runs the model on TEXT (at most the context; a longer text keeps its last
context tokens) and shows, for every block and head, the attention weights:
row i is the position that looks, column j the position it looks at, each
row sums to 1. With the causal mask, everything right of the diagonal is 0.
A run folder stands for its model.safetensors.

For a translation model (encoder–decoder), TEXT is a source sentence and
the figure has three kinds of maps per block and head: the encoder's
self-attention over the source words (and <eos>), the decoder's causal
self-attention over <sos> and the translation's words, and the
cross-attention alignment: one row per target word being written, one
column per source word. The translation is the model's own greedy one,
or --target's.

A model of more than 16 heads in all (GPT-2: 12 blocks × 12 heads) shows
the block × head summary instead of every map: for each head, the entropy
of a position's weights in bits (0: it looks at one position) and the mean
distance it looks back, in positions, both averaged over the positions;
--head B.H then prints block B's head H (from 0) after the summary, or
draws its heatmap alone. --summary asks for the summary of any model.

As text, every block and head is a table printed to stdout, its columns
in bands that fit the terminal (80 columns on a pipe). As a picture
(PNG or SVG), the file holds a grid of heatmaps, one row per block and one
column per head, with the tokens on both axes (a space shows as ·, a newline
as ¶), one colour scale, 0 to 1, for all, and a colour bar.

Flags:
  --text TEXT             the text to look at (required)
  --head B.H              only block B's head H (counted from 0), after the
                          summary
  --summary               only the block × head summary (the default above
                          16 heads)
  --target TEXT           a translation model's target sentence (default:
                          its own greedy translation of --text)
  --out FILE              the picture to write; its extension, .png or .svg,
                          is its format (- with --format png|svg: stdout)
  --format text|png|svg   text (the default without --out) prints tables;
                          png or svg without --out writes att.png or att.svg
` + forceUsage + threadsUsage,
	run: runAttention,
}

// matrix is one head's n×n attention weights (sample.Attention's).
type matrix = sample.Matrix

func runAttention(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("attention", flag.ContinueOnError)
	threads := threadsFlag(fs)
	text := fs.String("text", "", "")
	target := fs.String("target", "", "")
	format := fs.String("format", "", "")
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	head := fs.String("head", "", "")
	summary := fs.Bool("summary", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("attention needs exactly one MODEL file, got %d arguments", len(pos))
	case *text == "":
		return usagef("attention needs --text TEXT")
	case *summary && *head != "":
		return usagef("--summary and --head ask for two different views; give one")
	}
	if *format, *out, err = pictureOutput(*format, *out, "att"); err != nil {
		return err
	}
	if *out != "" {
		err := checkOutput("--out", *out, atomicfile.Rules{Force: *force, Inputs: pos,
			Own: atomicfile.HasPrefix("\x89PNG", "<?xml", "<svg")})
		if err != nil {
			return err
		}
	}

	model, err := modelPath(pos[0])
	if err != nil {
		return err
	}
	if translate.IsTranslationFile(model) {
		if *summary || *head != "" {
			return usagef("--summary and --head are for language models; %s is a translation model, whose maps all show", pos[0])
		}
		if flagGiven(fs, "target") && strings.TrimSpace(*target) == "" {
			return usagef("--target is empty; leave it out to see the model's own translation")
		}
		return translationAttention(model, *text, *target, *format, *out, backend(*threads), stdout)
	}
	if flagGiven(fs, "target") {
		return usagef("--target is for translation models; %s is a language model", pos[0])
	}
	m, err := openModel(model, attentionGraphs(*head, *summary))
	if err != nil {
		return err
	}
	view, err := viewOf(m.Spec, *head, *summary)
	if err != nil {
		return err
	}
	ids, err := m.Vocab.Encode(*text)
	if err != nil {
		return usagef("--text: %v", err)
	}
	if T := m.Spec.Context; len(ids) > T {
		ids = ids[len(ids)-T:]
	}
	stats, maps, err := attentionHeads(m, ids, view, backend(*threads))
	if err != nil {
		return err
	}
	if err := checkFinite(m, maps, stats); err != nil {
		return err
	}
	if !view.all {
		return attentionSummary(m, ids, stats, maps, view, *format, *out, stdout)
	}
	return allHeads(m, ids, maps, *format, *out, stdout)
}

// checkFinite refuses attention weights, or head statistics, that are not
// finite numbers: a model whose weights overflowed.
func checkFinite(m *savedmodel.Model, maps [][]matrix, stats [][]headStats) error {
	for _, heads := range maps {
		for _, h := range heads {
			for _, w := range h.W {
				if math.IsNaN(w) || math.IsInf(w, 0) {
					return notFinite(m, "attention weights")
				}
			}
		}
	}
	for _, heads := range stats {
		for _, s := range heads {
			if math.IsNaN(s.Entropy) || math.IsNaN(s.Distance) || math.IsInf(s.Distance, 0) {
				return notFinite(m, "attention weights")
			}
		}
	}
	return nil
}

// allHeads prints, or draws in format to out, the map of every head of m
// over the tokens ids.
func allHeads(m *savedmodel.Model, ids []int, maps [][]matrix, format, out string, stdout io.Writer) error {
	labels := make([]string, len(ids))
	for i, id := range ids {
		labels[i] = m.Vocab.Label(id) // a BPE piece's broken bytes as <0xE2>
	}

	if format == "text" {
		for i, l := range labels {
			labels[i] = fmt.Sprintf("%q", l)
		}
		for b := range maps {
			for h, mat := range maps[b] {
				fmt.Fprintf(stdout, "block %d, head %d\n", b, h)
				printMatrix(stdout, labels, labels, mat, terminal.Width(stdout))
				fmt.Fprintln(stdout)
			}
		}
		return nil
	}
	for i, l := range labels {
		labels[i] = heatmap.Label(l)
	}
	// What the heatmaps show: the last context tokens, which may start
	// inside a character a BPE spells in several tokens.
	shown := strings.ToValidUTF8(m.Vocab.Decode(ids), "\uFFFD")
	picture, err := drawAttention(heatmap.Square(maps, labels), heatmap.Title{Model: m.Path, Text: shown}, format)
	if err != nil {
		return err
	}
	// Encoded in memory first and renamed into place: a failure leaves no
	// half-written image behind, and an old one stays intact.
	if err := writeOutput(out, stdout, func(w io.Writer) error { _, err := w.Write(picture); return err }); err != nil {
		return err
	}
	wrote(stdout, out, ": %d×%d heatmaps (blocks × heads) over %d tokens", len(maps), m.Spec.Heads, len(ids))
	return nil
}

// pictureOutput settles what a picture-writing command writes from its
// --format and --out flags: text without --out, otherwise the format the
// file name's extension says, so that a file named .svg always holds SVG.
// A --format that contradicts the extension, or an extension gptg cannot
// draw, is refused rather than guessed at. base names the default file.
func pictureOutput(format, out, base string) (string, string, error) {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(out)), ".")
	switch {
	case format != "" && format != "text" && !slices.Contains(heatmap.Formats, format):
		return "", "", usagef("--format %q is not text, %s", format, strings.Join(heatmap.Formats, " or "))
	case out == "" && format == "":
		return "text", "", nil
	case out == "":
		if format == "text" {
			return "text", "", nil
		}
		return format, base + "." + format, nil
	case format == "text":
		return "", "", usagef("--out is for pictures; --format text goes to stdout")
	case atomicfile.IsStdout(out):
		if format == "" {
			return "", "", usagef("--out %s (standard output) needs --format %s", out, strings.Join(heatmap.Formats, " or "))
		}
		return format, out, nil
	case !slices.Contains(heatmap.Formats, ext):
		return "", "", usagef("--out %s: the picture format comes from the extension, which must be .png or .svg", out)
	case format != "" && format != ext:
		return "", "", usagef("--format %s does not match --out %s; name the file .%s", format, out, format)
	}
	return ext, out, nil
}

// keptMaps is the number of heads' maps gptg attention keeps for a model:
// every head's up to gridAbove of them, else the --head one or none.
func keptMaps(spec config.Model, head string, summary bool) int {
	switch {
	case head != "":
		return 1
	case summary || spec.Blocks*spec.Heads > gridAbove:
		return 0
	}
	return spec.Blocks * spec.Heads
}

// attentionView is what gptg attention shows: every head's map (all), or
// the summary with block b's head h (b = -1: none).
type attentionView struct {
	all  bool
	b, h int
}

// attentionGraphs counts what gptg attention holds of a model: the
// sampler's graphs, which hold every block's weights, and the maps kept
// from them as float64s: every head's, one or none.
func attentionGraphs(head string, summary bool) func(spec config.Model) graphsOf {
	return func(spec config.Model) graphsOf {
		g := samplerGraphs(spec, "running")
		T := float64(spec.Context)
		g.extra += 8 * float64(keptMaps(spec, head, summary)) * T * T
		return g
	}
}

// viewOf is the view --head and --summary ask of a model of spec: by
// default every head's map, or the summary where there are more than
// gridAbove heads.
func viewOf(spec config.Model, head string, summary bool) (attentionView, error) {
	view := attentionView{all: head == "" && !summary && spec.Blocks*spec.Heads <= gridAbove, b: -1, h: -1}
	if head != "" {
		var err error
		if view.b, view.h, err = parseHead(head, spec.Blocks, spec.Heads); err != nil {
			return view, err
		}
	}
	return view, nil
}

// attentionHeads runs the model on ids and returns every head's statistics
// and the maps the view shows (sample.AttentionHeads).
func attentionHeads(m *savedmodel.Model, ids []int, view attentionView, be graph.Backend) ([][]sample.HeadStats, [][]matrix, error) {
	s, err := sample.New(m, be)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	return s.AttentionHeads(ids, func(b, h int) bool { return view.all || (b == view.b && h == view.h) })
}

// attentionSummary shows the block × head summary and, if the view names
// one, that head's map: as tables, or as a picture of the summary (the
// head's own heatmap with --head).
func attentionSummary(m *savedmodel.Model, ids []int, stats [][]sample.HeadStats, maps [][]matrix, view attentionView, format, out string, stdout io.Writer) error {
	labels := make([]string, len(ids))
	for i, id := range ids {
		labels[i] = m.Vocab.Label(id)
	}
	if format == "text" {
		printSummary(stdout, stats, len(ids), m.Spec.Mask)
		if view.b < 0 {
			fmt.Fprintf(stdout, "\n--head B.H prints one head's weights, such as --head %d.%d\n", len(stats)-1, 0)
			return nil
		}
		for i, l := range labels {
			labels[i] = fmt.Sprintf("%q", l)
		}
		fmt.Fprintf(stdout, "\nblock %d, head %d\n", view.b, view.h)
		printMatrix(stdout, labels, labels, maps[view.b][view.h], terminal.Width(stdout))
		return nil
	}
	shown := strings.ToValidUTF8(m.Vocab.Decode(ids), "\uFFFD")
	title := heatmap.Title{Model: m.Path, Text: shown}
	var picture []byte
	var err error
	var what string
	if view.b >= 0 {
		for i, l := range labels {
			labels[i] = heatmap.Label(l)
		}
		one := [][]matrix{{maps[view.b][view.h]}}
		panels := heatmap.Square(one, labels)
		panels[0][0].Title = fmt.Sprintf("block %d, head %d", view.b, view.h)
		picture, err = drawAttention(panels, title, format)
		what = fmt.Sprintf(": block %d, head %d over %d tokens", view.b, view.h, len(ids))
	} else {
		picture, err = heatmap.Summary(stats, evenHead(len(ids), m.Spec.Mask), title, format)
		what = fmt.Sprintf(": the entropy and mean distance of %d×%d heads (blocks × heads) over %d tokens", len(stats), m.Spec.Heads, len(ids))
	}
	if err != nil {
		return err
	}
	if err := writeOutput(out, stdout, func(w io.Writer) error { _, err := w.Write(picture); return err }); err != nil {
		return err
	}
	wrote(stdout, out, "%s", what)
	return nil
}

// printMatrix prints one head's weights, row i the position that looks
// (rows[i]), column j the one it looks at (cols[j]), in bands of columns
// narrower than width (a terminal's, 80 on a pipe): a 25-character text,
// 155 columns in one piece, is two bands at 80. Every band repeats the row
// labels.
func printMatrix(w io.Writer, rows, cols []string, m matrix, width int) {
	cell := 5 // "0.123"
	for _, l := range append(append([]string(nil), rows...), cols...) {
		cell = max(cell, utf8.RuneCountInString(l))
	}
	pad := func(s string) string { return strings.Repeat(" ", cell-utf8.RuneCountInString(s)) + s }
	per := max(1, (width-1-cell)/(cell+1)) // columns per band, the last terminal column left free
	for lo := 0; lo < len(cols); lo += per {
		hi := min(len(cols), lo+per)
		if lo > 0 || hi < len(cols) {
			fmt.Fprintf(w, "columns %d–%d of %d\n", lo+1, hi, len(cols))
		}
		var line strings.Builder
		line.WriteString(strings.Repeat(" ", cell))
		for _, l := range cols[lo:hi] {
			line.WriteString(" " + pad(l))
		}
		fmt.Fprintln(w, line.String())
		for i, l := range rows {
			line.Reset()
			line.WriteString(pad(l))
			for j := lo; j < hi; j++ {
				line.WriteString(" " + pad(fmt.Sprintf("%.3f", m.At(i, j))))
			}
			fmt.Fprintln(w, line.String())
		}
	}
}

// drawAttention is heatmap.Picture, its refusal of a picture too large to
// draw a usage error (exit 2): the command line asked for it.
func drawAttention(panels [][]heatmap.Panel, title heatmap.Title, format string) ([]byte, error) {
	picture, err := heatmap.Picture(panels, title, format)
	if big := (*heatmap.SizeError)(nil); errors.As(err, &big) {
		return nil, usagef("%s", big.Error())
	}
	return picture, err
}
