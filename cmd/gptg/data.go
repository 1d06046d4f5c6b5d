package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/recipe"
)

var dataCommand = command{
	summary: "list or export the built-in corpora, write a toy corpus or nanoGPT's token files, check a translation corpus, learn a BPE",
	usage: `Usage: gptg data toy --out FILE [--sentences N] [--seed S]
       gptg data pairs CONFIG [--out DIR] [--set section.key=value ...]
       gptg data list
       gptg data export NAME --out FILE
       gptg data bpe CORPUS --vocab-size N [--split F] [--show K]
       gptg data prepare RECIPE --out DIR
       gptg data prepare --text FILE --out DIR [--split F]

"gptg data list" prints the corpora built into gptg (data.path =
"builtin:NAME"): name, size and SHA-256. "gptg data export NAME --out FILE"
writes one out as a file, for tools that need a file (the PyTorch
reference, an editor). docs/data.md says more.

Writes N sentences of a small grammar, one per line, for word-level models
(tokenizer = "word", see configs/toy-words.toml):

  determiner [adjective] subject verb determiner [adjective] object .

e.g. "the big cat chases a red ball ." A model that has learnt it samples
grammatical sentences, and its attention shows which words it looks at.
The defaults' output is built into gptg as data.path = "builtin:toy"
(configs/toy-words.toml uses it); this command writes other sizes and seeds.

"gptg data prepare RECIPE --out DIR" writes DIR/train.bin and DIR/val.bin,
the token files of nanoGPT's data/RECIPE/prepare.py (2-byte ids, no
header: nanoGPT's train.py reads them, and gptg trains on them with
data.format = "tokens", see docs/data.md), from a corpus built into gptg
and byte for byte what nanoGPT's script writes. The recipes:

` + recipeList() + `
"gptg data prepare --text FILE --out DIR" does the same for a text of your
own, as nanoGPT's prepare.py scripts do for theirs: the first 90% of its
characters (--split) and the rest, each encoded with GPT-2's tokenizer on
its own. A text of any size: it is read twice, a megabyte at a time, and
the ids written as they come (docs/data.md).

"gptg data pairs CONFIG" reads a translation config's pairs corpus
(data.format = "pairs", see docs/translation.md) as training will, and
prints what the length filter left out, the train/test split, the
vocabularies, the share of UNK words and how much of a padded batch is
padding. A malformed line is reported as FILE:LINE. With --out DIR it also
writes the split, the vocabularies, the training run's batches in order and
the resolved config there (train.tsv, test.tsv, src.vocab, tgt.vocab,
batches.tsv, config.toml), for a reference trainer (bench/transref.py) to
train on the same data in the same order.

` + dataBPEUsage + `

Flags:
  --out FILE       toy: where to write (required; folders are created; - for
                   standard output); an existing file needs --force;
                   pairs: a folder for the split, vocabularies and batches;
                   prepare: the folder for train.bin and val.bin (made
                   when missing)
  --sentences N    number of sentences (default 5000)
  --seed S         random seed (default 1); the same seed, the same file
  --force          replace an existing file (toy, export) or the files of
                   an existing folder (pairs, prepare)
  --vocab-size N   bpe: the vocabulary, 256 byte values and N-256 merges
  --text FILE      prepare: a UTF-8 text of your own instead of a recipe
  --split F        bpe, prepare --text: the training split's share of the
                   text (default 0.9)
  --show K         bpe: how many merges to print (default 20; 0 = none)
`,
	run: runData,
}

func runData(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "bpe" {
		return runDataBPE(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	out := fs.String("out", "", "")
	n := fs.Int("sentences", corpus.ToyDefaultSentences, "")
	seed := fs.Uint64("seed", corpus.ToyDefaultSeed, "")
	force := fs.Bool("force", false, "")
	text := fs.String("text", "", "")
	split := fs.Float64("split", config.Default().Data.Split, "")
	var sets setFlags
	fs.Var(&sets, "set", "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if err := refuseUnusedDataFlags(fs, pos); err != nil {
		return err
	}
	if len(pos) >= 1 && (pos[0] == "list" || pos[0] == "export") {
		return runDataBuiltin(pos, *out, *force, stdout)
	}
	if len(pos) >= 1 && pos[0] == "prepare" && flagGiven(fs, "text") {
		if len(pos) != 1 {
			return usagef("data prepare takes a recipe or --text FILE, not both (got %s and --text)", quote.Value(pos[1]))
		}
		return runDataPrepareText(*text, *split, *out, *force, stdout, stderr)
	}
	if flagGiven(fs, "split") {
		return usagef("--split is for gptg data prepare --text FILE: a recipe has its own split")
	}
	if len(pos) >= 1 && pos[0] == "prepare" {
		if len(pos) != 2 {
			return usagef("data prepare needs the name of one recipe (%s), got %d arguments", strings.Join(config.PrepareRecipes, ", "), len(pos)-1)
		}
		return runDataPrepare(pos[1], *out, *force, stdout)
	}
	if len(pos) >= 1 && pos[0] == "pairs" {
		if len(pos) != 2 {
			return usagef("data pairs needs exactly one CONFIG file, got %d arguments", len(pos)-1)
		}
		return runDataPairs(pos[1], sets, *out, *force, stdout)
	}
	switch {
	case len(pos) != 1 || pos[0] != "toy":
		return usagef("data needs what to do: gptg data toy --out FILE, gptg data pairs CONFIG, gptg data list, gptg data export NAME --out FILE, gptg data prepare RECIPE --out DIR, or gptg data bpe CORPUS --vocab-size N")
	case *out == "":
		return usagef("data toy needs --out FILE")
	case *n < 1 || *n > 10_000_000:
		return usagef("--sentences %d must be between 1 and 10000000", *n)
	}
	if err := checkOutput("--out", *out, atomicfile.Rules{Force: *force}); err != nil {
		return err
	}
	if err := writeOutputMakingFolders(*out, stdout, func(w io.Writer) error { return corpus.WriteToySentences(w, *n, *seed) }); err != nil {
		return err
	}
	if !atomicfile.IsStdout(*out) {
		fmt.Fprintf(stdout, "wrote %d sentences to %s\n", *n, quote.Name(*out))
	}
	return nil
}

// dataFlags are the flags each of gptg data's subcommands reads (bpe
// parses its own).
var dataFlags = map[string][]string{
	"toy":     {"out", "sentences", "seed", "force"},
	"pairs":   {"out", "force", "set"},
	"list":    {},
	"export":  {"out", "force"},
	"prepare": {"out", "force", "text", "split"},
}

// refuseUnusedDataFlags refuses a flag the subcommand would not read, as
// a setting is used or refused, never accepted and ignored.
func refuseUnusedDataFlags(fs *flag.FlagSet, pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	used, ok := dataFlags[pos[0]]
	if !ok {
		return nil // an unknown subcommand: runData says what there is
	}
	var unused []string
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(used, f.Name) {
			unused = append(unused, "--"+f.Name)
		}
	})
	if len(unused) > 0 {
		return usagef("gptg data %s does not use %s", pos[0], strings.Join(unused, ", "))
	}
	return nil
}

// runDataBuiltin lists the built-in corpora, or writes one out as a file.
func runDataBuiltin(pos []string, out string, force bool, stdout io.Writer) error {
	if pos[0] == "list" {
		if len(pos) != 1 {
			return usagef("data list takes no arguments")
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "data.path\tbytes\tsha256")
		for _, c := range builtin.All() {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", c.Path(), c.Size, c.SHA256)
		}
		return tw.Flush()
	}
	switch {
	case len(pos) != 2:
		return usagef("data export needs the name of one built-in corpus (gptg data list shows them)")
	case out == "":
		return usagef("data export needs --out FILE")
	}
	name := strings.TrimPrefix(pos[1], builtin.Prefix)
	text, err := builtin.Bytes(name)
	if err != nil {
		return usagef("there is no built-in corpus %q (built in: %s)", name, strings.Join(builtin.Names(), ", "))
	}
	// The rule of every output flag (checkOutput): standard output for -,
	// and an existing file is replaced only with --force.
	if err := checkOutput("--out", out, atomicfile.Rules{Force: force}); err != nil {
		return err
	}
	if err := writeOutputMakingFolders(out, stdout, func(w io.Writer) error { _, err := w.Write(text); return err }); err != nil {
		return err
	}
	wrote(stdout, out, " (%s, %d bytes)", builtin.Prefix+name, len(text))
	return nil
}

// recipeList is the usage's list of gptg data prepare's recipes.
func recipeList() string {
	var b strings.Builder
	for _, r := range recipe.All {
		fmt.Fprintf(&b, "  %-13s %s\n", r.Name, r.About)
	}
	return b.String()
}

// runDataPrepareText writes the token files of the text at path into
// the folder out: both, or neither.
func runDataPrepareText(path string, split float64, out string, force bool, stdout, stderr io.Writer) error {
	switch {
	case path == "":
		return usagef("--text needs a FILE")
	case out == "":
		return usagef("data prepare needs --out DIR, the folder for train.bin and val.bin")
	case !(split > 0 && split < 1):
		return usagef("--split %v must be between 0 and 1 (exclusive)", split)
	}
	return writeTokenFiles(out, atomicfile.Rules{Force: force, Inputs: []string{path}}, stdout, func(tp, vp string) (recipe.Counts, error) {
		bar := newStatusOf(stderr, "tokenizing "+quote.Name(path), "bytes (read twice)")
		n, err := recipe.FromText(bar.ctx, path, split, tp, vp, bar.update)
		interrupted := bar.ctx.Err() != nil
		bar.done()
		if err != nil && interrupted {
			return n, interruptedError{fmt.Errorf("interrupted while tokenizing %s: neither token file written", quote.Name(path))}
		}
		return n, err
	})
}

// writeTokenFiles writes train.bin and val.bin into the folder out with
// write, under the output rules (an existing file needs --force), making
// the folder when it is missing and removing what it made when write
// fails: both files, or neither.
func writeTokenFiles(out string, rules atomicfile.Rules, stdout io.Writer, write func(trainPath, valPath string) (recipe.Counts, error)) error {
	if err := checkOutputFolder("--out", out, "data prepare writes train.bin and val.bin into it", false); err != nil {
		return err
	}
	tp, vp := filepath.Join(out, "train.bin"), filepath.Join(out, "val.bin")
	for _, p := range []string{tp, vp} {
		if err := checkOutput("--out", p, rules); err != nil {
			return err
		}
	}
	made, err := makeFolders(out)
	if err != nil {
		return err
	}
	n, err := write(tp, vp)
	if err != nil {
		removeFolders(made)
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d tokens) and %s (%d tokens)\n", quote.Name(tp), n.Train, quote.Name(vp), n.Val)
	return nil
}

// runDataPrepare writes the token files of recipe name into the folder
// out: both, or neither.
func runDataPrepare(name, out string, force bool, stdout io.Writer) error {
	r, ok := recipe.Lookup(name)
	switch {
	case !ok:
		return usagef("there is no recipe %s (recipes: %s)", quote.Value(name), strings.Join(config.PrepareRecipes, ", "))
	case out == "":
		return usagef("data prepare needs --out DIR, the folder for train.bin and val.bin")
	}
	return writeTokenFiles(out, atomicfile.Rules{Force: force}, stdout, r.Write)
}
