package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/translate"
)

var exportCommand = command{
	summary: "write a model file with its weights in bfloat16 (or back in float32)",
	usage: `Usage: gptg export MODEL.safetensors|RUN_DIR --dtype bfloat16 --out FILE [--force]

Writes the model file again with every weight stored as the --dtype says,
its metadata unchanged. Model files keep float32 weights; a bfloat16 one
is half the size, for sharing or for PyTorch (safetensors dtype "BF16"):
each float32 is rounded to the nearest bfloat16, ties to even, exactly as
PyTorch's .to(torch.bfloat16) rounds it. sample, eval, attention, inspect,
serve and translate read such a file as any other, widening each weight to
float32 as they load it: the model they run is the rounded one, whose
outputs and losses differ a little from the float32 file's. A run folder
stands for its model.safetensors. The model is checked as inspect checks it
before anything is written.

Flags:
  --dtype D     bfloat16, or float32 (a bfloat16 file back to float32:
                the rounded weights, widened exactly); float64 models are
                refused (their weights would round twice)
  --out FILE    the model file to write (required; - for standard output)
  --force       replace an existing file (a model is not replaced without it)
`,
	run: runExport,
}

// exportDtypes are the values of export --dtype and the writers of each.
var exportDtypes = map[string]struct {
	file   func(path string, tensors []modelfile.Tensor, meta map[string]string) error
	stream func(w io.Writer, tensors []modelfile.Tensor, meta map[string]string) error
}{
	"bfloat16": {modelfile.WriteBF16, modelfile.WriteToBF16},
	"float32":  {modelfile.Write, modelfile.WriteTo},
}

func runExport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	dtype := fs.String("dtype", "", "")
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	writers, known := exportDtypes[*dtype]
	switch {
	case len(pos) != 1:
		return usagef("export needs exactly one MODEL file, got %d arguments", len(pos))
	case *dtype == "":
		return usagef("export needs --dtype bfloat16 (or float32)")
	case !known:
		return usagef("--dtype %s: export writes bfloat16 or float32", quote.Value(*dtype))
	case *out == "":
		return usagef("export needs --out FILE")
	}
	model, err := modelPath(pos[0])
	if err != nil {
		return err
	}
	if err := checkOutput("--out", *out, atomicfile.Rules{Force: *force, Inputs: []string{model}}); err != nil {
		return err
	}
	if err := checkExportable(model); err != nil {
		return err
	}
	f, err := modelfile.Read(model, modelfile.Limits{MaxFileSize: savedmodel.MaxFileSize})
	if err != nil {
		return err // the file changed since it was checked
	}
	tensors := make([]modelfile.Tensor, len(f.Order))
	for i, name := range f.Order {
		tensors[i] = f.Tensors[name]
	}
	if atomicfile.IsStdout(*out) {
		return writeOutput(*out, stdout, func(w io.Writer) error { return writers.stream(w, tensors, f.Meta) })
	}
	if err := writers.file(*out, tensors, f.Meta); err != nil {
		return err
	}
	params := 0
	for _, t := range tensors {
		params += t.Len()
	}
	wrote(stdout, *out, ": %d tensors, %d parameters in %s", len(tensors), params, *dtype)
	return nil
}

// checkExportable reads the model file a tensor at a time with inspect's
// checks (the metadata, the graph it describes, every tensor's name,
// shape and values) and refuses a float64 model and one too large for
// the memory export holds (its weights in float32, and what the output
// takes a chunk at a time).
func checkExportable(path string) error {
	limit, err := memoryLimit()
	if err != nil {
		return err
	}
	check := func(dtype string, params int64, weights float64) error {
		if dtype == "float64" {
			return usagef("%s is a float64 model: export takes float32 and bfloat16 models (a float64 weight would round twice on its way to bfloat16)", quote.Name(path))
		}
		e := config.MemoryEstimate{Params: params, Weights: weights}
		if err := config.CheckMemory(e, limit, fmt.Sprintf("%s: exporting this model", path), envMaxMemory+"="); err != nil {
			return refusedError{err}
		}
		return nil
	}
	if translate.IsTranslationFile(path) {
		m, err := translate.Scan(path, func(m *translate.Model, dataBytes int64) error {
			// At most dataBytes/2 parameters (BF16), 4 bytes each once read.
			return check(m.Config.Dtype, dataBytes/2, 2*float64(dataBytes))
		})
		if err != nil {
			return err
		}
		if _, err := graph.BuildTranslation(m.Spec, graph.TranslationOptions{Batch: 1, SrcLen: 1, TgtLen: 1, Weights: m.ZeroWeights()}); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	_, _, err = savedmodel.Scan(path, func(spec config.Model, dataBytes int64) error {
		return check(spec.Dtype, spec.ParamCount(), 4*float64(spec.ParamCount()))
	}, checkingParams(path))
	return err
}
