package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/sample"
)

var sampleCommand = command{
	summary: "generate text from a model file",
	usage: `Usage: gptg sample MODEL.safetensors|RUN_DIR [--prompt TEXT | --prompt-file FILE]
                   [--tokens N] [--temperature T] [--top-k K] [--top-p P]
                   [--seed S] [--samples N]

Rebuilds the model from the file alone (its metadata holds the config and
the vocabulary) and streams the prompt followed by the generated tokens to
stdout. A prompt longer than the context feeds its last context tokens, as
the seed's generate() does. The same seed gives the same text.

A run folder stands for its model.safetensors. In a run folder, the
defaults of --prompt, --tokens, --temperature, --top-k and --top-p come
from the [sample] table of the config.toml beside the model file (read
only when one of these flags is left out); a model file elsewhere takes
the defaults below.

Flags:
  --prompt TEXT        text to start from (default "\n")
  --prompt-file FILE   read the prompt from a file instead
  --tokens N           tokens to generate, at most 1000000 (default 256)
  --temperature T      1 = the model's distribution, 0 = always the most
                       likely token (default 1)
  --top-k K            draw only among the K most likely tokens (0 = off)
  --top-p P            draw only among the most likely tokens whose
                       probabilities sum to P (0 = off)
  --seed S             random seed (default 42)
  --samples N          independent samples, separated by a blank line (default 1)
  --stats              print tokens/s to stderr at the end
` + threadsUsage,
	run: runSample,
}

// maxPromptFile bounds --prompt-file: only the last context tokens of a
// prompt reach the model, and the prompt is echoed whole.
const maxPromptFile = 1 << 20

func runSample(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	threads := threadsFlag(fs)
	prompt := fs.String("prompt", "", "")
	promptFile := fs.String("prompt-file", "", "")
	tokens := fs.Int("tokens", 0, "")
	temperature := fs.Float64("temperature", 0, "")
	topK := fs.Int("top-k", 0, "")
	topP := fs.Float64("top-p", 0, "")
	seed := fs.Uint64("seed", 42, "")
	samples := fs.Int("samples", 1, "")
	stats := fs.Bool("stats", false, "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(pos) != 1:
		return usagef("sample needs exactly one MODEL file, got %d arguments", len(pos))
	case set["prompt"] && set["prompt-file"]:
		return usagef("give --prompt or --prompt-file, not both")
	}
	model, err := modelPath(pos[0])
	if err != nil {
		return err
	}

	// Flags the user left out take the run's [sample] table, so that
	// `gptg sample runs/x` samples as the config says. The config.toml
	// is read only when some default is needed: with every flag given, a
	// broken or foreign config.toml beside the model does not matter.
	set["prompt"] = set["prompt"] || set["prompt-file"]
	if !(set["prompt"] && set["tokens"] && set["temperature"] && set["top-k"] && set["top-p"]) {
		defaults, err := sampleDefaults(model)
		if err != nil {
			return err
		}
		if !set["prompt"] {
			*prompt = defaults.Prompt
		}
		if !set["tokens"] {
			*tokens = defaults.Tokens
		}
		if !set["temperature"] {
			*temperature = defaults.Temperature
		}
		if !set["top-k"] {
			*topK = defaults.TopK
		}
		if !set["top-p"] {
			*topP = defaults.TopP
		}
	}
	// Checked after the merge: a run's config.toml may be edited by hand.
	switch {
	case *tokens < 0 || *tokens > 1_000_000:
		return usagef("--tokens %d must be between 0 and 1000000", *tokens)
	case !(*temperature >= 0) || math.IsInf(*temperature, 0):
		return usagef("--temperature %v must be a finite number ≥ 0", *temperature)
	case *topK < 0:
		return usagef("--top-k %d must be ≥ 0", *topK)
	case !(*topP >= 0 && *topP <= 1):
		return usagef("--top-p %v must be between 0 and 1", *topP)
	case *samples < 1 || *samples > 1000:
		return usagef("--samples %d must be between 1 and 1000", *samples)
	}
	if *promptFile != "" {
		b, err := inputfile.ReadFile(*promptFile, maxPromptFile)
		if errors.Is(err, iofs.ErrNotExist) {
			return usagef("--prompt-file %s: no such file", quote.Name(*promptFile))
		}
		if err != nil {
			return fmt.Errorf("prompt file: %w", err)
		}
		*prompt = string(b)
	}
	m, err := openModel(model, func(spec config.Model) graphsOf { return samplerGraphs(spec, "sampling") })
	if err != nil {
		return err
	}
	// The prompt is echoed before the first token is drawn: check it first,
	// so that a bad one prints nothing but its error.
	if _, err := sample.EncodePrompt(m.Vocab, *prompt); err != nil {
		return err
	}
	s, err := sample.New(m, backend(*threads))
	if err != nil {
		return err
	}
	defer s.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	start := time.Now()
	for i := 0; i < *samples; i++ {
		if i > 0 {
			fmt.Fprint(out, "\n\n")
		}
		fmt.Fprint(out, *prompt)
		o := sample.Options{Tokens: *tokens, Temperature: *temperature, TopK: *topK, TopP: *topP, Seed: *seed + uint64(i)}
		err := s.Generate(*prompt, o, func(tok string) error {
			if _, err := out.WriteString(tok); err != nil {
				return err
			}
			return out.Flush() // stream: show each token as it is drawn
		})
		if errors.Is(err, sample.ErrNotFinite) {
			fmt.Fprintln(out) // end the prompt's line: the error goes on its own
			out.Flush()
			return notFinite(m, "logits")
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	if err := out.Flush(); err != nil {
		return err
	}
	if *stats {
		secs := time.Since(start).Seconds()
		n := *tokens * *samples
		fmt.Fprintf(stderr, "{\"tokens\": %d, \"sample_s\": %.3f, \"tokens_per_s\": %.0f}\n", n, secs, float64(n)/secs)
	}
	return nil
}

// sampleDefaults returns the [sample] table of the config.toml beside the
// model file, which is where train writes both in a run folder. A model
// file elsewhere takes the built-in defaults (config.Default's).
func sampleDefaults(model string) (config.Sample, error) {
	cfg, err := runConfig(model, "the defaults of the flags not given (give all of --prompt, --tokens, --temperature, --top-k, --top-p to skip it)")
	if err != nil || cfg == nil {
		return config.Default().Sample, err
	}
	return cfg.Sample, nil
}
