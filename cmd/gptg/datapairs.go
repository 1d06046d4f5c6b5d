package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/train"
)

// runDataPairs reads a translation config's pairs corpus the way training
// will and says what it holds: what the length filter left out, the split,
// the vocabularies, how many words read as UNK and how much of a padded
// batch is padding. A bad line is reported as FILE:LINE.
//
// With out set, it also writes what it read into that folder, for a
// reference trainer in another language to read the very same data:
// train.tsv and test.tsv (line, source words, target words, source text,
// target text, tab-separated; words are space-separated and read back with
// the vocabularies, UNK where missing), src.vocab and tgt.vocab (one
// word per line, in id order: PAD, SOS, EOS, UNK first), batches.tsv (the
// training run's batches, step by step) and config.toml (the config as
// resolved, --set included): bench/transref.py trains on them.
func runDataPairs(cfgPath string, sets []string, out string, force bool, stdout io.Writer) error {
	cfg, err := config.Load(cfgPath, sets)
	if err != nil {
		return err
	}
	d := cfg.Data
	if d.Format != "pairs" {
		return usagef("%s: data.format is %q: gptg data pairs reads a translation config (data.format = \"pairs\")", cfgPath, d.Format)
	}
	if out != "" {
		if err := checkPairsOut(out, pairsOutFiles, atomicfile.Rules{Force: force, Inputs: []string{cfgPath, d.Path}}); err != nil {
			return err
		}
	}
	c, err := pairs.LoadFor(cfg)
	if err != nil {
		return err
	}
	kept := len(c.Train) + len(c.Test)
	fmt.Fprintf(stdout, "%s: %d lines, %d pairs kept (%d..%d source words, at most %d target words; %d shorter, %d longer left out)\n",
		d.Path, c.Lines, kept, d.MinSource, d.MaxSource, d.MaxTarget, c.TooShort, c.TooLong)
	fmt.Fprintf(stdout, "split %g by a hash of the source sentence: %d training pairs, %d test pairs\n", d.Split, len(c.Train), len(c.Test))
	fmt.Fprintf(stdout, "vocabularies (words seen at least %d times in the training pairs, + PAD SOS EOS UNK): source %d, target %d\n",
		d.MinCount, c.Src.Size(), c.Tgt.Size())
	for _, side := range []struct {
		name string
		ps   []pairs.Pair
	}{{"training", c.Train}, {"test", c.Test}} {
		fmt.Fprintf(stdout, "UNK in the %s pairs: source %.1f%%, target %.1f%% of words\n", side.name, unkRate(side.ps, true), unkRate(side.ps, false))
	}
	b := pairs.NewBatcher(c.Train, cfg.Train.Batch, d.MaxSource, d.MaxTarget, d.Buckets)
	words, positions := 0, 0
	for _, p := range b.InOrder() {
		s := b.Shapes()[p.Bucket]
		positions += b.Batch() * (s.S + s.T)
		for _, i := range p.Pairs {
			words += len(c.Train[i].Src) + len(c.Train[i].Tgt) + 2
		}
	}
	var shapes []string
	for _, s := range b.Shapes() {
		shapes = append(shapes, fmt.Sprintf("%d×%d", s.S, s.T))
	}
	fmt.Fprintf(stdout, "%d training batches of %d padded to source×target positions %s: %.0f%% of the positions hold a word, SOS or EOS\n",
		len(b.InOrder()), b.Batch(), strings.Join(shapes, ", "), 100*float64(words)/float64(max(1, positions)))
	if out == "" {
		return nil
	}
	// batches.tsv has a line per training step: bounded, as a config
	// may ask for a million epochs.
	if steps := train.TranslationSteps(cfg, len(b.Epoch(0, 0))) * max(1, cfg.Train.GradAccum); steps > maxBatchesSteps {
		return usagef("batches.tsv would list %d training steps, one line each; at most %d: lower train.max_steps or train.epochs (--set) for the reference run", steps, maxBatchesSteps)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	resolved, err := cfg.TOML()
	if err != nil {
		return err
	}
	bytesOf := func(b []byte) func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write(b); return err }
	}
	files := map[string]func(io.Writer) error{
		"train.tsv": bytesOf(pairsTSV(c.Train, c)), "test.tsv": bytesOf(pairsTSV(c.Test, c)),
		"src.vocab":   bytesOf([]byte(strings.Join(c.Src.Words(), "\n") + "\n")),
		"tgt.vocab":   bytesOf([]byte(strings.Join(c.Tgt.Words(), "\n") + "\n")),
		"batches.tsv": func(w io.Writer) error { return batchesTSV(w, cfg, b) }, // streamed: up to hundreds of MB
		"config.toml": bytesOf(resolved),
	}
	for _, name := range pairsOutFiles {
		if err := atomicfile.WriteOwn(filepath.Join(out, name), files[name]); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(out, name), err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s to %s\n", strings.Join(pairsOutFiles, ", "), out)
	return nil
}

// maxBatchesSteps bounds the lines of batches.tsv (about 200 bytes each
// at batch 32).
const maxBatchesSteps = 1_000_000

// pairsOutFiles are the files data pairs --out writes, in order.
var pairsOutFiles = []string{"train.tsv", "test.tsv", "src.vocab", "tgt.vocab", "batches.tsv", "config.toml"}

// checkPairsOut settles, before any work, whether data pairs may write
// names into the folder out, under the rule of every output flag
// (checkOutput): a folder, not standard output or a file; and in it, an
// existing file of one of those names is replaced only when it is one
// data pairs wrote before (or with --force), never an input.
func checkPairsOut(out string, names []string, r atomicfile.Rules) error {
	// A folder it wrote before holds config.toml too: runs are checked file
	// by file below.
	if err := checkOutputFolder("--out", out, fmt.Sprintf("data pairs writes a folder of files (%s)", strings.Join(names, ", ")), true); err != nil {
		return err
	}
	// Not even with --force: a run's config.toml is its record (resume and
	// eval read it), which data pairs' config.toml would replace.
	for _, f := range []string{train.ModelFile, train.CheckpointFile} {
		if _, err := os.Lstat(filepath.Join(out, f)); err == nil {
			return usagef("--out %s is a training run's folder (it holds %s): data pairs would replace the run's config.toml; give another folder",
				quote.Name(out), f)
		}
	}
	for _, name := range names {
		rules := r
		rules.Own = ownPairsFile(name)
		if err := checkOutput("--out", filepath.Join(out, name), rules); err != nil {
			return err
		}
	}
	return nil
}

// ownPairsFile recognises, from its first bytes, a file of data pairs
// --out: the split's rows start with a line number and a tab, the
// vocabularies with <pad>, the batches with "# shapes", the config with
// the line config.TOML writes first; an empty file holds nothing to lose.
func ownPairsFile(name string) func(head []byte) bool {
	return func(head []byte) bool {
		if len(head) == 0 {
			return true
		}
		switch filepath.Ext(name) {
		case ".vocab":
			return bytes.HasPrefix(head, []byte(pairs.Specials[0]+"\n"))
		case ".tsv":
			if bytes.HasPrefix(head, []byte("# shapes ")) {
				return true
			}
			i := bytes.IndexByte(head, '\t')
			if i < 1 {
				return false
			}
			_, err := strconv.Atoi(string(head[:i]))
			return err == nil
		case ".toml":
			return bytes.HasPrefix(head, []byte("# gptg config resolved from "))
		}
		return false
	}
}

// batchesTSV is the training run's batches in the order gptg train takes
// them: a header line "# shapes S×T …" (the buckets' shapes, smallest
// first), then one line per batch: its step (from 1; train.grad_accum
// batches share one), bucket, the indices of the batch's pairs (0-based
// rows of train.tsv, space-separated).
func batchesTSV(w io.Writer, cfg *config.Config, b *pairs.Batcher) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# shapes")
	for _, s := range b.Shapes() {
		fmt.Fprintf(bw, " %d×%d", s.S, s.T)
	}
	bw.WriteString("\n")
	perEpoch := len(b.Epoch(0, 0))
	var plans []pairs.Plan
	accum := max(1, cfg.Train.GradAccum)
	for k := range train.TranslationSteps(cfg, perEpoch) * accum {
		if k%perEpoch == 0 {
			plans = b.Epoch(uint64(cfg.Train.Seed), k/perEpoch)
		}
		p := plans[k%perEpoch]
		fmt.Fprintf(bw, "%d\t%d\t", k/accum+1, p.Bucket)
		for i, k := range p.Pairs {
			if i > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(strconv.Itoa(k))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// pairsTSV writes pairs as "line, source words, target words, source text,
// target text" rows; a word the vocabulary lacks is written as it is, and
// reads back as UNK.
func pairsTSV(ps []pairs.Pair, c *pairs.Corpus) []byte {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d\t%s\t%s\t%s\t%s\n", p.Line,
			strings.Join(pairs.Tokenize(p.SrcText), " "), strings.Join(pairs.Tokenize(p.TgtText), " "),
			oneSpace(p.SrcText), oneSpace(p.TgtText))
	}
	return []byte(b.String())
}

// oneSpace turns the tabs a sentence may hold into spaces, so that it
// stays one column.
func oneSpace(s string) string { return strings.NewReplacer("\t", " ", "\r", " ").Replace(s) }

// unkRate is the percentage of UNK ids on one side of ps.
func unkRate(ps []pairs.Pair, source bool) float64 {
	unk, n := 0, 0
	for _, p := range ps {
		ids := p.Tgt
		if source {
			ids = p.Src
		}
		for _, id := range ids {
			if id == pairs.UNK {
				unk++
			}
		}
		n += len(ids)
	}
	return 100 * float64(unk) / float64(max(1, n))
}
