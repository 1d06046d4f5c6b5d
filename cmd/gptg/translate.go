package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/gptg/gptg/translate"
)

var translateCommand = command{
	summary: "translate sentences with an encoder–decoder model",
	usage: `Usage: gptg translate MODEL.safetensors|RUN_DIR [--text "SENTENCE"] [--beam K] [--alpha A]

Translates --text, or else every line of stdin, one translation per line.
The encoder runs once per sentence; the decoder then writes the
translation word by word, one position per word (the keys and values of
the words before are cached, as are those of the encoder's output):
the most likely word each time (--beam 1,
greedy), or by beam search, keeping the K most likely partial
translations and choosing among the finished ones by log p over the
length penalty ((5 + length)/6)^A, as the paper's setup does (K = 4,
A = 0.6). A run folder stands for its model.safetensors.

Flags:
  --text SENTENCE   the sentence to translate (default: read lines from stdin)
  --beam K          beam width, 1 = greedy (default 1)
  --alpha A         length penalty exponent, 0 = none (default 0.6)
  --no-cache        rerun the decoder over the whole translation for each
                    word instead of caching (the same translations,
                    slower: for comparison)
  --verbose         also print the source words as the model read them
                    (<unk> for unknown words) and the translation's log p
` + threadsUsage,
	run: runTranslate,
}

func runTranslate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("translate", flag.ContinueOnError)
	threads := threadsFlag(fs)
	text := fs.String("text", "", "")
	beam := fs.Int("beam", 1, "")
	alpha := fs.Float64("alpha", 0.6, "")
	verbose := fs.Bool("verbose", false, "")
	noCache := fs.Bool("no-cache", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("translate needs exactly one MODEL file or run folder, got %d arguments", len(pos))
	}
	if *beam < 1 || *beam > 64 {
		return usagef("--beam %d: give a beam width from 1 to 64", *beam)
	}
	if !(*alpha >= 0 && *alpha <= 10) {
		return usagef("--alpha %v: give a length penalty exponent from 0 to 10", *alpha)
	}
	path, err := modelPath(pos[0])
	if err != nil {
		return err
	}
	if err := refuseLanguageModel(path, "translate"); err != nil {
		return err
	}
	graphs := decodeGraphs(*beam, *noCache, false)
	m, err := openTranslation(path, "translating with", graphs)
	if err != nil {
		return err
	}
	tr := translate.NewTranslator(m, backend(*threads))
	tr.Recompute = *noCache
	tr.Check = checkLonger(m, "translating", graphs)
	opts := translate.Options{Beam: *beam, Alpha: *alpha}
	one := func(line string) error {
		r, err := tr.Translate(line, opts)
		if errors.Is(err, translate.ErrInput) {
			return usagef("%v", err)
		}
		if err != nil {
			return err
		}
		if math.IsNaN(r.LogProb) || math.IsInf(r.LogProb, 0) {
			return notFiniteIn(m.Path, m.Tensors, "translation scores (log p)")
		}
		if *verbose {
			fmt.Fprintf(stdout, "# source: %s\n# log p: %.4f\n", strings.Join(r.Source, " "), r.LogProb)
		}
		_, err = fmt.Fprintln(stdout, r.Text)
		return err
	}
	if flagGiven(fs, "text") {
		return one(*text)
	}
	return translateLines(os.Stdin, stdout, one)
}

// translateLines translates each line of in with one (an empty line stays
// empty), naming the line of a failure.
func translateLines(in io.Reader, stdout io.Writer, one func(line string) error) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 1
	for ; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			fmt.Fprintln(stdout)
			continue
		}
		if err := one(line); err != nil {
			var ue usageError
			if errors.As(err, &ue) {
				return usagef("stdin:%d: %s", n, ue.msg)
			}
			return fmt.Errorf("stdin:%d: %w", n, err)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return usagef("stdin:%d: the line is longer than 1 MiB, more than any sentence the model reads", n)
	} else if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	return nil
}

// flagGiven reports whether the command line set the flag.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
