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
	"github.com/gptg/gptg/savedmodel"
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
  --stats              print tokens/s to stderr at the end, and the time
                       to the first token (the prompt's run) apart
` + threadsUsage,
	run: runSample,
}

// maxPromptFile bounds --prompt-file: only the last context tokens of a
// prompt reach the model, and the prompt is echoed whole.
const maxPromptFile = 1 << 20

// runSample is `gptg sample`: the request, the model, then the samples
// streamed to stdout.
func runSample(args []string, stdout, stderr io.Writer) error {
	req, err := parseSample(args, stderr)
	if err != nil {
		return err
	}
	m, err := openModel(req.model, func(spec config.Model) graphsOf { return samplerGraphs(spec, "sampling") })
	if err != nil {
		return err
	}
	// The prompt is echoed before the first token is drawn: check it first,
	// so that a bad one prints nothing but its error.
	if _, err := sample.EncodePrompt(m.Vocab, req.prompt); err != nil {
		if req.defaultPrompt {
			return usagef("no --prompt given, and the default prompt %s (the run's [sample] prompt) cannot start a sample: %v; give --prompt with words the model knows", quote.Value(req.prompt), err)
		}
		return usageError{err.Error()} // the prompt is an argument, as translate's sentence is
	}
	s, err := sample.New(m, backend(req.threads))
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now()
	var first time.Time // when the first token was drawn
	if err := writeSamples(stdout, s, m, req, &first); err != nil {
		return err
	}
	if req.stats {
		end := time.Now()
		secs := end.Sub(start).Seconds()
		n := req.opts.Tokens * req.samples
		fmt.Fprintf(stderr, "{\"tokens\": %d, \"sample_s\": %.3f, \"tokens_per_s\": %.0f", n, secs, float64(n)/secs)
		// The first token waits for the prompt; the others are what
		// generation runs at.
		if n > 1 && !first.IsZero() {
			fmt.Fprintf(stderr, ", \"first_token_s\": %.3f, \"after_first_tokens_per_s\": %.2f",
				first.Sub(start).Seconds(), float64(n-1)/end.Sub(first).Seconds())
		}
		fmt.Fprintln(stderr, "}")
	}
	return nil
}

// sampleRequest is what `gptg sample` was asked for, its flags merged with
// the run's [sample] table and checked.
type sampleRequest struct {
	model  string // the model file
	prompt string // the prompt itself, --prompt-file read
	// defaultPrompt: no --prompt was given; prompt is the run's [sample]
	// prompt (or "\n"), which a word-level model cannot start from.
	defaultPrompt bool
	opts          sample.Options
	samples       int
	stats         bool
	threads       int
}

// parseSample reads the command line: the flags given, the run's [sample]
// table for those left out, then the checks of the merged values and the
// prompt file.
func parseSample(args []string, stderr io.Writer) (sampleRequest, error) {
	var req sampleRequest
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	threads := threadsFlag(fs)
	fs.StringVar(&req.prompt, "prompt", "", "")
	promptFile := fs.String("prompt-file", "", "")
	fs.IntVar(&req.opts.Tokens, "tokens", 0, "")
	fs.Float64Var(&req.opts.Temperature, "temperature", 0, "")
	fs.IntVar(&req.opts.TopK, "top-k", 0, "")
	fs.Float64Var(&req.opts.TopP, "top-p", 0, "")
	fs.Uint64Var(&req.opts.Seed, "seed", 42, "")
	fs.IntVar(&req.samples, "samples", 1, "")
	fs.BoolVar(&req.stats, "stats", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return req, err
	}
	req.threads = *threads
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(pos) != 1:
		return req, usagef("sample needs exactly one MODEL file, got %d arguments", len(pos))
	case set["prompt"] && set["prompt-file"]:
		return req, usagef("give --prompt or --prompt-file, not both")
	}
	if req.model, err = modelPath(pos[0]); err != nil {
		return req, err
	}
	set["prompt"] = set["prompt"] || set["prompt-file"]
	if err := req.takeRunDefaults(set); err != nil {
		return req, err
	}
	if err := req.check(); err != nil {
		return req, err
	}
	if *promptFile != "" {
		b, err := inputfile.ReadFile(*promptFile, maxPromptFile)
		if errors.Is(err, iofs.ErrNotExist) {
			return req, usagef("--prompt-file %s: no such file", quote.Name(*promptFile))
		}
		if err != nil {
			return req, fmt.Errorf("prompt file: %w", err)
		}
		req.prompt = string(b)
	}
	return req, nil
}

// takeRunDefaults gives the flags the user left out the run's [sample]
// table, so that `gptg sample runs/x` samples as the config says. The
// config.toml is read only when some default is needed: with every flag
// given, a broken or foreign config.toml beside the model does not matter.
func (req *sampleRequest) takeRunDefaults(set map[string]bool) error {
	if set["prompt"] && set["tokens"] && set["temperature"] && set["top-k"] && set["top-p"] {
		return nil
	}
	defaults, err := sampleDefaults(req.model)
	if err != nil {
		return err
	}
	if !set["prompt"] {
		req.prompt, req.defaultPrompt = defaults.Prompt, true
	}
	if !set["tokens"] {
		req.opts.Tokens = defaults.Tokens
	}
	if !set["temperature"] {
		req.opts.Temperature = defaults.Temperature
	}
	if !set["top-k"] {
		req.opts.TopK = defaults.TopK
	}
	if !set["top-p"] {
		req.opts.TopP = defaults.TopP
	}
	return nil
}

// check refuses values out of range, after the merge: a run's config.toml
// may be edited by hand.
func (req *sampleRequest) check() error {
	o := req.opts
	switch {
	case o.Tokens < 0 || o.Tokens > 1_000_000:
		return usagef("--tokens %d must be between 0 and 1000000", o.Tokens)
	case !(o.Temperature >= 0) || math.IsInf(o.Temperature, 0):
		return usagef("--temperature %v must be a finite number ≥ 0", o.Temperature)
	case o.TopK < 0:
		return usagef("--top-k %d must be ≥ 0", o.TopK)
	case !(o.TopP >= 0 && o.TopP <= 1):
		return usagef("--top-p %v must be between 0 and 1", o.TopP)
	case req.samples < 1 || req.samples > 1000:
		return usagef("--samples %d must be between 1 and 1000", req.samples)
	}
	return nil
}

// writeSamples streams each sample to stdout, the prompt first and then
// each token as it is drawn, samples apart by a blank line; sample i
// draws with seed + i.
func writeSamples(stdout io.Writer, s *sample.Sampler, m *savedmodel.Model, req sampleRequest, first *time.Time) error {
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	for i := 0; i < req.samples; i++ {
		if i > 0 {
			fmt.Fprint(out, "\n\n")
		}
		fmt.Fprint(out, req.prompt)
		o := req.opts
		o.Seed += uint64(i)
		err := s.Generate(req.prompt, o, func(tok string) error {
			if first.IsZero() {
				*first = time.Now()
			}
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
	return out.Flush()
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
