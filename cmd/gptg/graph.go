package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gptg/gptg/internal/atomicfile"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/nanogpt"
)

var graphCommand = command{
	summary: "print a config's parameter table and graph size; --dot writes Graphviz",
	usage: `Usage: gptg graph CONFIG.toml [--set section.key=value]... [--dot FILE [--forward]]

Builds the training graph CONFIG describes (the vocabulary size comes from
the data file unless model.vocab is set) and prints every parameter with its
shape and count, the total, and the number of nodes of the compiled training
graph (forward and symbolic backward).

Flags:
  --set section.key=value  override a config value (repeatable); also
                           written --section.key=value
  --dot FILE               also write the expression graph as Graphviz DOT
                           (- for standard output, instead of the table);
                           draw it with Graphviz: dot -Tsvg FILE -o graph.svg;
                           nodes are named by id (n1f is %1f), so the same
                           config gives the same bytes and diff compares two
  --forward                the forward graph only (embedding to loss), without
                           the backward nodes gorgonia.Grad adds: a third of
                           the nodes, and the one to read first
` + forceUsage,
	run: runGraph,
}

func runGraph(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	var sets setFlags
	fs.Var(&sets, "set", "")
	dot := fs.String("dot", "", "")
	forward := fs.Bool("forward", false, "")
	force := fs.Bool("force", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("graph needs exactly one CONFIG file, got %d arguments", len(pos))
	}
	if *dot != "" {
		err := checkOutput("--dot", *dot, atomicfile.Rules{Force: *force, Inputs: pos,
			Own: atomicfile.HasPrefix("digraph", "strict digraph", "graph", "//")})
		if err != nil {
			return err
		}
	}
	cfg, err := config.Load(pos[0], sets)
	if err != nil {
		return err
	}
	if err := cfg.CheckTrainMemory(); err != nil { // again below once the data gives the vocabulary
		return err
	}
	// With --dot to standard output the table would spoil the DOT: only
	// the DOT goes there.
	table := stdout
	if atomicfile.IsStdout(*dot) {
		table = io.Discard
	}
	writeDot := dotWriter(*dot, stdout)
	if cfg.Model.EncoderDecoder() {
		return graphTranslation(cfg, table, *forward, writeDot)
	}
	return graphGPT(cfg, table, *forward, writeDot)
}

// dotWriter writes the DOT text to dot (nothing when dot is ""), saying
// how to draw it.
func dotWriter(dot string, stdout io.Writer) func(text string) error {
	return func(text string) error {
		if dot == "" {
			return nil
		}
		if err := writeOutput(dot, stdout, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
			return err
		}
		wrote(stdout, dot, "")
		if !atomicfile.IsStdout(dot) {
			fmt.Fprintf(stdout, "draw it with Graphviz (apt-get install graphviz): dot -Tsvg %s -o graph.svg\n", dot)
		}
		return nil
	}
}

// graphGPT prints the parameters, nodes and memory estimate of a GPT
// config's training graph (the forward graph alone with forward) to
// table, and gives writeDot its DOT.
func graphGPT(cfg *config.Config, table io.Writer, forward bool, writeDot func(string) error) error {
	held := cfg.CorpusOf()
	if cfg.Model.Vocab == 0 { // the vocabulary comes from the data
		if err := checkDataPath(cfg); err != nil {
			return err
		}
		data, err := nanogpt.LoadData(context.Background(), *cfg, table, nil)
		if err != nil {
			return err
		}
		data.Close()
		if cfg.Model.Vocab, err = corpus.ModelVocab(*cfg, data); err != nil {
			return err
		}
		held = data.Memory()
	}
	if err := cfg.CheckTrainMemoryOn(held); err != nil {
		return err
	}
	held.Held = false // the estimate printed is the training's, corpus and all
	m, err := graph.Build(cfg.Model, graph.Options{Batch: cfg.Train.Batch, Loss: true, Seed: cfg.Train.Seed, Backend: backend(1)})
	if err != nil {
		return err
	}
	nodes, forwardNodes := "forward", len(m.G.AllNodes())
	if !forward { // Compile adds the backward nodes (gorgonia.Grad)
		p, err := tape.Compile(m, true)
		if err != nil {
			return err
		}
		defer p.Close()
		nodes = "forward + backward"
	}
	printParams(table, m.Params)
	fmt.Fprintf(table, "graph nodes (%s, batch %d): %d\n", nodes, cfg.Train.Batch, len(m.G.AllNodes()))
	fmt.Fprintf(table, "memory estimate for training: %s; limit train.max_memory = %s GiB\n",
		cfg.TrainMemoryOn(held), strconv.FormatFloat(cfg.Train.MaxMemory, 'g', -1, 64))
	return writeDot(graph.Dot(m.G, forwardNodes))
}

func printParams(w io.Writer, params []*graph.Param) {
	fmt.Fprintf(w, "%-28s %-12s %10s\n", "parameter", "shape", "count")
	for _, p := range params {
		dims := make([]string, len(p.Shape))
		for i, d := range p.Shape {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(w, "%-28s %-12s %10d\n", p.Name, "["+strings.Join(dims, ", ")+"]", p.Size())
	}
	fmt.Fprintf(w, "%-28s %-12s %10d\n", "total", "", graph.CountParams(params))
}
