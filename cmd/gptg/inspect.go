package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
)

var inspectCommand = command{
	summary: "print a model file's metadata and parameter table",
	usage: `Usage: gptg inspect MODEL.safetensors

Prints the model file's metadata (format, model switches, tokenizer and
vocabulary size), then every parameter with its shape and count, and the
total. The file is fully checked: the graph its metadata describes is
rebuilt and every tensor must fit it.
`,
	run: runInspect,
}

func runInspect(args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("inspect needs exactly one MODEL file, got %d arguments", len(pos))
	}
	m, err := openModel(pos[0], func(spec config.Model) graphsOf {
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
	fmt.Printf("file: %s\n", m.Path)
	for _, k := range keys {
		v := m.Meta[k]
		if k == "vocab" {
			v = fmt.Sprintf("%d %s tokens", m.Vocab.Size(), m.Vocab.Kind())
		}
		fmt.Printf("%s: %s\n", k, v)
	}
	fmt.Println()
	printParams(os.Stdout, g.Params)
	return nil
}
