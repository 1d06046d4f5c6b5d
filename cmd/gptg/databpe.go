package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/quote"
)

// dataBPEUsage is the part of gptg data's usage about gptg data bpe.
const dataBPEUsage = `"gptg data bpe CORPUS --vocab-size N" learns the byte-level BPE that
tokenizer = "bpe" would learn for a config with data.path = CORPUS (a file
or builtin:NAME) and data.vocab_size = N, on the same training split
(--split, default 0.9), and prints how long it took and the first merges
in the order learned: each one's new id, the two ids it joins, the bytes of
the new token (Go-quoted: a leading space shows, a part of a character is
\xNN) and how often the pair occurred when it was merged. docs/tokenization.md
says more.`

// runDataBPE is gptg data bpe: args are what follows "bpe".
func runDataBPE(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("data bpe", flag.ContinueOnError)
	vocab := fs.Int("vocab-size", 0, "")
	split := fs.Float64("split", config.Default().Data.Split, "")
	show := fs.Int("show", 20, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usagef("data bpe needs exactly one CORPUS (a file or builtin:NAME), got %d arguments", len(pos))
	case *vocab == 0:
		return usagef("data bpe needs --vocab-size N (at least %d: the byte values and N-%d merges)", bpe.MinVocab, bpe.MinVocab)
	case *vocab < bpe.MinVocab || *vocab > config.MaxVocab:
		return usagef("--vocab-size %d is out of range (allowed: %d..%d)", *vocab, bpe.MinVocab, config.MaxVocab)
	case !(*split > 0 && *split < 1):
		return usagef("--split %v must be between 0 and 1 (exclusive)", *split)
	case *show < 0:
		return usagef("--show %d must not be negative (0 prints the summary only)", *show)
	}
	path := pos[0]
	bar := newStatusOf(stderr, "learning merges", "merges")
	start := time.Now()
	learned, err := corpus.LearnBPE(bar.ctx, path, *vocab, *split, bar.update)
	bar.done()
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	size := corpus.FileSize(path)
	fmt.Fprintf(stdout, "%d merges learned in %.2f s on the training split of %s: %d of its %d bytes (split %v), %d distinct pieces\n",
		len(learned.Merges), secs, quote.Name(path), learned.TrainBytes, size, *split, learned.Pieces)
	if *show == 0 || len(learned.Merges) == 0 {
		return nil
	}
	tokens := make([][]byte, bpe.MinVocab, *vocab)
	for b := range tokens {
		tokens[b] = []byte{byte(b)}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tleft\tright\ttoken\tcount")
	for i, m := range learned.Merges {
		tokens = append(tokens, append(append([]byte(nil), tokens[m[0]]...), tokens[m[1]]...))
		if i < *show {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\n", bpe.MinVocab+i, m[0], m[1], strconv.Quote(string(tokens[bpe.MinVocab+i])), learned.Counts[i])
		}
	}
	return tw.Flush()
}
