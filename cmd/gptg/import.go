package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/nanogpt"
)

var importCommand = command{
	summary: "convert a nanoGPT checkpoint or a Hugging Face GPT-2 into a gptg model file",
	usage: `Usage: gptg import nanogpt CKPT.pt [--meta META.pkl] --out MODEL.safetensors
       gptg import hf DIR [--out MODEL.safetensors] [--tokenizer auto|ids]

gptg import nanogpt:

Reads a checkpoint written by nanoGPT's train.py (github.com/karpathy/nanoGPT)
and writes a gptg model file that sample, eval, attention and inspect use
like any other. Both files are pickles; they are read without executing
anything: only the classes a checkpoint uses (tensors, storages, dicts) are
accepted, anything else is refused.

The model becomes gptg's pre-norm transformer with the switches that make it
nanoGPT's GPT (tie_embeddings, final_norm, activation = "gelu_exact",
bias as in the checkpoint); c_attn is cut into q, k and v. Checkpoints of
compiled models (keys prefixed _orig_mod.) and of PyTorch 1 and 2 (with or
without the attn.bias mask buffers) are accepted.

The conversion holds the weights about four times over (16 bytes a
parameter); a model that would need more than 8 GiB (GPTG_MAX_MEMORY=GiB
changes it) or than the process may still take (ulimit -v, a cgroup's
memory limit, the machine's memory) is refused before its weights are read.

A checkpoint without a meta.pkl whose vocabulary is GPT-2's (50,257, or
nanoGPT's padded 50,304) is a GPT-2 (nanoGPT's openwebtext and
shakespeare recipes, which encode with tiktoken's GPT-2): it imports with
GPT-2's tokenizer. Of a padded
vocabulary the first 50,257 rows are kept: the other 47 are no token's.

Flags:
  --meta FILE   the char vocabulary, nanoGPT's data/<dataset>/meta.pkl
                (default: where sample.py finds it: beside CKPT.pt, else
                data/<dataset>/meta.pkl with <dataset> from the checkpoint's
                config, here or in the folder above CKPT.pt's; none: a
                GPT-2 vocabulary, as above)
  --out FILE    the model file to write (required; - for standard output)
  --force       replace an existing file (a model is not replaced without it)

gptg import hf:
` + hfUsage,
	run: runImport,
}

func runImport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	meta := fs.String("meta", "", "")
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	tokenizer := fs.String("tokenizer", "auto", "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(pos) > 0 && pos[0] == "hf":
		if set["meta"] {
			return usagef("--meta is for import nanogpt; a Hugging Face folder holds its tokenizer files")
		}
		return runImportHF(pos[1:], *out, *force, *tokenizer, stdout)
	case len(pos) == 0 || pos[0] != "nanogpt":
		return usagef("import needs the kind of checkpoint: gptg import nanogpt CKPT.pt --out MODEL.safetensors, or gptg import hf DIR")
	case set["tokenizer"]:
		return usagef("--tokenizer is for import hf")
	case len(pos) != 2:
		return usagef("import nanogpt needs exactly one CKPT.pt, got %d arguments", len(pos)-1)
	case *out == "":
		return usagef("import nanogpt needs --out MODEL.safetensors")
	}
	return importNanoGPT(pos[1], *meta, *out, *force, stdout)
}

// importNanoGPT converts nanoGPT's checkpoint ckpt, with its meta.pkl
// (meta, or found beside it, or none for GPT-2's tokenizer), into the
// model file out.
func importNanoGPT(ckpt, meta, out string, force bool, stdout io.Writer) error {
	// A missing file named on the command line is a wrong argument (exit 2),
	// like a missing config or model.
	for _, in := range []string{ckpt, meta} {
		if _, err := os.Lstat(in); in != "" && errors.Is(err, iofs.ErrNotExist) {
			return usagef("%s: no such file", quote.Name(in))
		}
	}
	// Without a meta.pkl nanoGPT's sample.py encodes with GPT-2's
	// tokenizer: so does the import, when the checkpoint's vocabulary is
	// GPT-2's (or nanoGPT's padding of it).
	var noMeta error
	if meta == "" {
		found, tried := nanogpt.FindMeta(ckpt)
		if found == "" {
			elsewhere := ""
			if len(tried) > 1 {
				elsewhere = " or at " + strings.Join(tried[1:], ", ")
			}
			noMeta = usagef("no --meta given and no meta.pkl beside %s%s, and the checkpoint's vocabulary is not GPT-2's: give --meta data/<dataset>/meta.pkl (nanoGPT's prepare.py writes it)", ckpt, elsewhere)
		}
		meta = found
	}
	inputs := []string{ckpt}
	if meta != "" {
		inputs = append(inputs, meta)
	}
	if err := checkOutput("--out", out, atomicfile.Rules{Force: force, Inputs: inputs}); err != nil {
		return err
	}
	// The file checked is the file written: a link given as --out is
	// followed now, once, and one that appears there while the checkpoint
	// converts is replaced, not followed to somewhere unchecked.
	target := out
	if !atomicfile.IsStdout(out) {
		var err error
		if target, err = atomicfile.Target(out); err != nil {
			return fmt.Errorf("--out: %w", err) // changed since the check above
		}
	}
	limit, err := importMemoryLimit()
	if err != nil {
		return err
	}
	var m *nanogpt.Model
	if noMeta != nil {
		vocab, err := corpus.NewGPT2Vocab()
		if err != nil {
			return err
		}
		m, err = nanogpt.ImportGPT2(ckpt, vocab, limit)
		var ng *nanogpt.NotGPT2Error
		if errors.As(err, &ng) {
			return noMeta
		}
		if err != nil {
			return err
		}
	} else if m, err = nanogpt.ImportWithin(ckpt, meta, limit); err != nil {
		return err
	}
	if atomicfile.IsStdout(out) {
		return writeOutput(out, stdout, m.Encode)
	}
	if err := m.Save(target); err != nil {
		return err
	}
	s := m.Spec
	wrote(stdout, out, ": %d blocks, %d heads, embedding %d, context %d, vocab %d, bias %v, %s",
		s.Blocks, s.Heads, s.Embedding, s.Context, s.Vocab, s.Bias, s.Dtype)
	return nil
}

// importMemoryLimit is the memory, in GiB, an import may take: the
// default of the model commands, or GPTG_MAX_MEMORY.
func importMemoryLimit() (float64, error) {
	limit := float64(config.DefaultMaxMemory)
	if s := os.Getenv(envMaxMemory); s != "" {
		var err error
		if limit, err = strconv.ParseFloat(s, 64); err != nil || !(limit > 0) {
			return 0, usagef("%s=%q is not a number of GiB", envMaxMemory, s)
		}
	}
	return limit, nil
}
