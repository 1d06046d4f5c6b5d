package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/sample"
)

var attentionCommand = command{
	summary: "show the attention weights of every block and head over a text",
	usage: `Usage: gptg attention MODEL.safetensors --text TEXT

Runs the model on TEXT (at most the context; a longer text keeps its last
context tokens) and prints, for every block and head, the attention weights
as a table: row i is the position that looks, column j the position it
looks at, each row sums to 1. With the causal mask, everything right of the
diagonal is 0.

Flags:
  --text TEXT   the text to look at (required)
`,
	run: runAttention,
}

func runAttention(args []string) error {
	fs := flag.NewFlagSet("attention", flag.ContinueOnError)
	text := fs.String("text", "", "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("attention needs exactly one MODEL file, got %d arguments", len(pos))
	case *text == "":
		return usagef("attention needs --text TEXT")
	}
	m, err := modelfile.LoadModel(pos[0])
	if err != nil {
		return err
	}
	ids, err := m.Vocab.Encode(*text)
	if err != nil {
		return err
	}
	if T := m.Spec.Context; len(ids) > T {
		ids = ids[len(ids)-T:]
	}
	s, err := sample.New(m)
	if err != nil {
		return err
	}
	defer s.Close()
	p, n, err := s.Forward(ids)
	if err != nil {
		return err
	}
	labels := make([]string, n)
	for i, id := range ids {
		labels[i] = fmt.Sprintf("%q", m.Vocab.Decode([]int{id}))
	}
	H, L := m.Spec.Heads, p.SeqLen
	for b, node := range p.Attention {
		w := graph.Float64s(node.Value()) // (heads, L, L) for batch 1
		for h := 0; h < H; h++ {
			fmt.Printf("block %d, head %d\n", b, h)
			printMatrix(os.Stdout, labels, func(i, j int) float64 { return w[(h*L+i)*L+j] })
			fmt.Println()
		}
	}
	return nil
}

func printMatrix(w *os.File, labels []string, at func(i, j int) float64) {
	width := 5
	for _, l := range labels {
		width = max(width, len(l))
	}
	fmt.Fprintf(w, "%*s", width, "")
	for _, l := range labels {
		fmt.Fprintf(w, " %*s", width, l)
	}
	fmt.Fprintln(w)
	for i, l := range labels {
		var row strings.Builder
		for j := range labels {
			fmt.Fprintf(&row, " %*.3f", width, at(i, j))
		}
		fmt.Fprintf(w, "%*s%s\n", width, l, row.String())
	}
}
