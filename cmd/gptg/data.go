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
	summary: "write a toy corpus, or check a translation corpus",
	usage: `Usage: gptg data toy --out FILE [--sentences N] [--seed S]
       gptg data pairs CONFIG [--out DIR] [--set section.key=value ...]

Writes N sentences of a small grammar, one per line, for word-level models
(tokenizer = "word", see configs/toy-words.toml):

  determiner [adjective] subject verb determiner [adjective] object .

e.g. "the big cat chases a red ball ." A model that has learnt it samples
grammatical sentences, and its attention shows which words it looks at.
The defaults' output is built into gptg as data.path = "builtin:toy"
(configs/toy-words.toml uses it); this command writes other sizes and seeds.

"gptg data pairs CONFIG" reads a translation config's pairs corpus
(data.format = "pairs", see docs/translation.md) as training will, and
prints what the length filter left out, the train/test split, the
vocabularies, the share of UNK words and how much of a padded batch is
padding. A malformed line is reported as FILE:LINE. With --out DIR it also
writes the split and the vocabularies there (train.tsv, test.tsv,
src.vocab, tgt.vocab), for a reference trainer to read the same data.

Flags:
  --out FILE       toy: where to write (required; folders are created; - for
                   standard output); an existing file needs --force;
                   pairs: a folder for the split and vocabularies
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
	var sets setFlags
	fs.Var(&sets, "set", "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) >= 1 && pos[0] == "pairs" {
		if len(pos) != 2 {
			return usagef("data pairs needs exactly one CONFIG file, got %d arguments", len(pos)-1)
		}
		return runDataPairs(pos[1], sets, *out, stdout)
	}
	switch {
	case len(pos) != 1 || pos[0] != "toy":
		return usagef("data needs what to do: gptg data toy --out FILE, or gptg data pairs CONFIG")
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
