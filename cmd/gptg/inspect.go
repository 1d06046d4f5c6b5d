package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/translate"
)

var inspectCommand = command{
	summary: "print a model file's metadata and parameter table",
	usage: `Usage: gptg inspect MODEL.safetensors|RUN_DIR [--vocab]

Prints the model file's name with the dtype its weights are stored in
(F32, F64, or BF16 as gptg export --dtype bfloat16 writes them, read as
float32; the tensors of each when the file mixes them), its metadata
(format, model switches, tokenizer and vocabulary size), then every
parameter with its shape and count, and the total. The file is fully
checked: the graph its metadata describes is rebuilt and every tensor
must fit it. A run folder stands for its model.safetensors.

Flags:
  --vocab   print the vocabulary instead, one token per line in id order
            (quoted as Go strings, so that a space or a newline shows),
            to see what a prompt may contain
`,
	run: runInspect,
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	vocab := fs.Bool("vocab", false, "")
	pos, err := parseFlags(fs, args, stderr)
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
	if err := refuseTranslation(model, "inspecting"); err != nil {
		return err
	}
	limit, err := memoryLimit()
	if err != nil {
		return err
	}
	// The table needs the parameters' names and shapes, and the check
	// every value: the file is read a tensor at a time (200 MB of a 50M
	// model took 400 MB to print a table), into a graph that is never run
	// and whose parameters share one buffer.
	m, params, err := savedmodel.Scan(model, func(spec config.Model, dataBytes int64) error {
		return config.CheckMemory(scanMemory(spec, dataBytes), limit, fmt.Sprintf("%s: inspecting this model", model), envMaxMemory+"=")
	}, checkingParams(model))
	if err != nil {
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
	fmt.Fprintf(stdout, "file: %s (weights stored as %s)\n", m.Path, storedDtypes(m.Stored))
	for _, k := range keys {
		v := m.Meta[k]
		switch k {
		case "vocab":
			v = fmt.Sprintf("%d %s tokens", m.Vocab.Size(), m.Vocab.Kind())
		case "merges": // thousands of pairs: --vocab lists the tokens
			v = fmt.Sprintf("%d (a %d-token %s vocabulary; --vocab lists the tokens)", len(m.Vocab.Merges()), m.Vocab.Size(), m.Vocab.Kind())
		}
		fmt.Fprintf(stdout, "%s: %s\n", k, v)
	}
	fmt.Fprintln(stdout)
	printParams(stdout, params)
	return nil
}

// storedDtypes says how a model file stores its weights, which its
// metadata does not: a model trained in bfloat16 is saved in float32, and
// gptg export writes BF16 whatever the model was trained in. Each dtype
// of a file mixing them is counted.
func storedDtypes(counts []modelfile.DtypeCount) string {
	if len(counts) == 1 {
		c := counts[0]
		s := fmt.Sprintf("%s: all %s, %d values", c.Dtype, nTensors(c.Tensors), c.Values)
		if c.Dtype == "BF16" {
			s += "; widened to float32 as read"
		}
		return s
	}
	widened := ""
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%s: %s, %d values", c.Dtype, nTensors(c.Tensors), c.Values)
		if c.Dtype == "BF16" {
			widened = "; BF16 widened to float32 as read"
		}
	}
	return strings.Join(parts, "; ") + widened
}

// nTensors is "1 tensor" or "n tensors".
func nTensors(n int) string {
	if n == 1 {
		return "1 tensor"
	}
	return fmt.Sprintf("%d tensors", n)
}

// checkingParams is savedmodel.Scan's builder for a check that never runs
// the model: a graph of the file's spec at batch 1 whose parameters share
// one buffer of zeros, so that reading checks each tensor against it.
func checkingParams(path string) func(config.Model) ([]*graph.Param, error) {
	return func(spec config.Model) ([]*graph.Param, error) {
		g, err := graph.Build(spec, graph.Options{Batch: 1, Weights: graph.SharedZeros(spec.Dtype)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err) // the metadata is at fault
		}
		return g.Params, nil
	}
}

// scanMemory is what inspect holds of a model file of dataBytes of tensor
// data that savedmodel.Scan reads: its largest tensor as read (in the
// file's widest dtype) and the zeros every parameter of the graph shares
// (in the model's), nothing of the rest.
func scanMemory(spec config.Model, dataBytes int64) config.MemoryEstimate {
	C := float64(spec.Embedding)
	largest := max(float64(spec.Vocab), float64(spec.Context), float64(spec.FFMult)*C) * C
	elem := 4.0
	if spec.Dtype == "float64" || dataBytes > 6*spec.ParamCount() {
		elem = 8
	}
	return config.MemoryEstimate{Params: spec.ParamCount(), Weights: 2 * elem * largest}
}
