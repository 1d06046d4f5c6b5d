package main

import (
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/translate"
)

var inspectCommand = command{
	summary: "print a model file's metadata and parameter table",
	usage: `Usage: gptg inspect MODEL.safetensors|RUN_DIR [--vocab]

Prints the model file's metadata (format, model switches, tokenizer and
vocabulary size), then every parameter with its shape and count, and the
total. The file is fully checked: the graph its metadata describes is
rebuilt and every tensor must fit it. A run folder stands for its
model.safetensors.

Flags:
  --vocab   print the vocabulary instead, one token per line in id order
            (quoted as Go strings, so that a space or a newline shows),
            to see what a prompt may contain
`,
	run: runInspect,
}

func runInspect(args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	vocab := fs.Bool("vocab", false, "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("inspect needs exactly one MODEL file, got %d arguments", len(pos))
	}
	model, err := modelPath(pos[0])
	if err != nil {
		return err
	}
	if translate.IsTranslationFile(model) {
		return inspectTranslation(model, *vocab, stdout)
	}
	m, err := openModel(model, func(spec config.Model) graphsOf {
		// one graph, never run: its weights, no activations
		return graphsOf{batch: 1, seqLen: spec.Context, count: 1, what: "inspecting"}
	})
	if err != nil {
		return err
	}
	g, err := graph.Build(m.Spec, graph.Options{Batch: 1})
	if err != nil {
		return fmt.Errorf("%s: %w", m.Path, err) // the metadata is at fault
	}
	if err := m.Apply(g.Params); err != nil {
		return err
	}
	keys := make([]string, 0, len(m.Meta))
	for k := range m.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if *vocab {
		for id, tok := range m.Vocab.Tokens() {
			fmt.Fprintf(stdout, "%d\t%q\n", id, tok)
		}
		return nil
	}
	fmt.Fprintf(stdout, "file: %s\n", m.Path)
	for _, k := range keys {
		v := m.Meta[k]
		if k == "vocab" {
			v = fmt.Sprintf("%d %s tokens", m.Vocab.Size(), m.Vocab.Kind())
		}
		fmt.Fprintf(stdout, "%s: %s\n", k, v)
	}
	fmt.Fprintln(stdout)
	printParams(stdout, g.Params)
	return nil
}
