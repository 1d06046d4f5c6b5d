package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
)

var dataCommand = command{
	summary: "write a toy corpus for word-level experiments",
	usage: `Usage: gptg data toy --out FILE [--sentences N] [--seed S]

Writes N sentences of a small grammar, one per line, for word-level models
(tokenizer = "word", see configs/toy-words.toml):

  determiner [adjective] subject verb determiner [adjective] object .

e.g. "the big cat chases a red ball ." A model that has learnt it samples
grammatical sentences, and its attention shows which words it looks at.
The defaults' output is built into gptg as data.path = "builtin:toy"
(configs/toy-words.toml uses it); this command writes other sizes and seeds.

Flags:
  --out FILE       where to write (required; folders are created; - for
                   standard output); an existing file needs --force
  --sentences N    number of sentences (default 5000)
  --seed S         random seed (default 1); the same seed, the same file
  --force          replace an existing file
`,
	run: runData,
}

func runData(args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	out := fs.String("out", "", "")
	n := fs.Int("sentences", corpus.ToyDefaultSentences, "")
	seed := fs.Uint64("seed", corpus.ToyDefaultSeed, "")
	force := fs.Bool("force", false, "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1 || pos[0] != "toy":
		return usagef("data needs the kind of corpus: gptg data toy --out FILE")
	case *out == "":
		return usagef("data toy needs --out FILE")
	case *n < 1 || *n > 10_000_000:
		return usagef("--sentences %d must be between 1 and 10000000", *n)
	}
	if err := checkOutput("--out", *out, atomicfile.Rules{Force: *force}); err != nil {
		return err
	}
	if !atomicfile.IsStdout(*out) {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return err
		}
	}
	text := corpus.ToySentences(*n, *seed)
	if err := writeOutput(*out, stdout, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
		return err
	}
	if !atomicfile.IsStdout(*out) {
		fmt.Fprintf(stdout, "wrote %d sentences to %s\n", *n, quote.Name(*out))
	}
	return nil
}
