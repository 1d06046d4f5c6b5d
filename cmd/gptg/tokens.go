package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/heatmap"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/savedmodel"
)

var tokensCommand = command{
	summary: "show how a text splits into tokens: ids, pieces, bytes per token",
	usage: `Usage: gptg tokens --tokenizer NAME [TEXT | --file FILE | --ids FILE]
       gptg tokens MODEL.safetensors|RUN_DIR [TEXT | --file FILE | --ids FILE]

Splits TEXT (or the text of FILE) into the tokens of a tokenizer and shows
them one per line: position, id, bytes and the piece, a space in it shown
as ·, a newline as ¶, a byte that is not part of a whole UTF-8 character
as <0xE2> (GPT-2 spells a rare character in several tokens). Then the
counts: tokens, distinct tokens, bytes, characters and bytes per token.

The tokenizer is one built into gptg (--tokenizer gpt2: GPT-2's byte-level
BPE, the ids of tiktoken's "gpt2" encoding) or a model's own: a model file
or a run folder (its model.safetensors), char, word, gpt2 or bpe.

With --ids FILE (- for standard input) it prints only the ids, separated
by single spaces, ending with a newline: the form other tools read. GPT-2's
tokenizer reads a text of any length a stretch at a time, in bounded
memory; a model's char or word vocabulary reads it whole.

The text must be UTF-8 (a byte that is not is an error naming its offset;
from standard input, the ids before it may have been printed). Special
tokens' texts such as <|endoftext|> are split as ordinary text.

Flags:
  --tokenizer NAME   gpt2 (a model's char or word vocabulary comes from the
                     model: give its file or run folder instead)
  --file FILE        the text to split (- for standard input)
  --ids FILE         print only the ids of FILE's text (- for standard input)
`,
	run: runTokens,
}

// stdin is what "-" reads; a variable so that tests can give it text.
var stdin io.Reader = os.Stdin

func runTokens(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	name := fs.String("tokenizer", "", "")
	file := fs.String("file", "", "")
	idsFile := fs.String("ids", "", "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	var v *corpus.Vocab
	if *name != "" {
		if v, err = namedTokenizer(*name); err != nil {
			return err
		}
	} else {
		if len(pos) == 0 {
			return usagef("tokens needs a tokenizer: --tokenizer gpt2, or a model file or run folder")
		}
		if v, err = modelTokenizer(pos[0]); err != nil {
			return err
		}
		pos = pos[1:]
	}
	texts := len(pos)
	for _, f := range []string{*file, *idsFile} {
		if f != "" {
			texts++
		}
	}
	switch {
	case len(pos) > 1:
		return usagef("tokens takes one TEXT, got %d arguments (quote a text with spaces)", len(pos))
	case texts != 1:
		return usagef("tokens needs one text: TEXT, --file FILE or --ids FILE")
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	if len(pos) == 1 {
		if err := showTokens(out, v, []byte(pos[0])); err != nil {
			return usageError{"the text: " + err.Error()} // an argument, as sample's prompt
		}
	} else {
		err = tokensOfFile(out, v, *file+*idsFile, *idsFile != "")
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// namedTokenizer is a tokenizer built into gptg, by name. Tokenizers that
// are learned from a corpus come from a model file (modelTokenizer).
func namedTokenizer(name string) (*corpus.Vocab, error) {
	switch name {
	case corpus.GPT2:
		return corpus.NewGPT2Vocab()
	case corpus.Char, corpus.Word:
		return nil, usagef("--tokenizer %s: a %s vocabulary is a corpus's own: give a model file or run folder trained with it instead", name, name)
	}
	return nil, usagef("--tokenizer %s: unknown tokenizer (built in: %s)", quote.Value(name), corpus.GPT2)
}

// modelTokenizer is the vocabulary of a model file or run folder, read
// from its header alone.
func modelTokenizer(arg string) (*corpus.Vocab, error) {
	path, err := modelPath(arg)
	var ue usageError
	if errors.As(err, &ue) {
		return nil, usagef("%s; to split a text with GPT-2's tokenizer give --tokenizer gpt2", ue.msg)
	}
	if err != nil {
		return nil, err
	}
	m, err := savedmodel.LoadMeta(path)
	if err != nil {
		return nil, err
	}
	return m.Vocab, nil
}

// tokensOfFile splits the text of path ("-": standard input) and shows its
// tokens, or prints its ids alone. A BPE reads it a stretch at a time; a
// char or word vocabulary reads it whole.
func tokensOfFile(out *bufio.Writer, v *corpus.Vocab, path string, idsOnly bool) error {
	r, err := openTokensInput(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if v.BPE() == nil {
		text, err := io.ReadAll(io.LimitReader(r, corpus.MaxDataSize+1))
		if err != nil {
			return fmt.Errorf("reading %s: %w", quote.Name(path), unwrapPath(err))
		}
		if len(text) > corpus.MaxDataSize {
			return refusedError{fmt.Errorf("%s is more than %d bytes, the most a %s vocabulary splits (it reads the text whole)", quote.Name(path), corpus.MaxDataSize, v.Kind())}
		}
		if idsOnly {
			ids, err := v.Encode(string(text))
			if err != nil {
				return inputError{fmt.Errorf("%s: %w", quote.Name(path), err)}
			}
			writeIDs(out, ids, true)
			return endIDs(out, len(ids))
		}
		if err := showTokens(out, v, text); err != nil {
			return inputError{fmt.Errorf("%s: %w", quote.Name(path), err)}
		}
		return nil
	}
	// A file is checked whole before anything is printed, so that a bad
	// byte near its end leaves no ids behind; standard input cannot be
	// read twice.
	if f, ok := r.(*os.File); ok && path != "-" {
		if err := corpus.EachChunk(context.Background(), f, func([]byte) error { return nil }); err != nil {
			return textError(path, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("%s: %w", quote.Name(path), unwrapPath(err))
		}
	}
	enc := v.BPE().NewStream()
	var show *tokenTable
	if !idsOnly {
		show = newTokenTable(out, v)
	}
	n := 0
	emit := func(ids []int) {
		if idsOnly {
			writeIDs(out, ids, n == 0)
		} else {
			show.add(ids)
		}
		n += len(ids)
	}
	err = corpus.EachChunk(context.Background(), r, func(chunk []byte) error {
		emit(enc.Write(chunk))
		if show != nil {
			show.text(chunk)
		}
		return nil
	})
	if err != nil {
		return textError(path, err)
	}
	emit(enc.Flush())
	if idsOnly {
		return endIDs(out, n)
	}
	show.summary()
	return nil
}

// textError is the error for a text that is not UTF-8 (bad input, exit 2)
// or could not be read (exit 1), naming where it came from.
func textError(path string, err error) error {
	what := quote.Name(path)
	if path == "-" {
		what = "standard input"
	}
	if errors.Is(err, corpus.ErrNotUTF8) {
		return inputError{fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("reading %s: %w", what, unwrapPath(err))
}

// inputError marks input that is wrong, not the command line: exit 2,
// without usage's "(see --help)".
type inputError struct{ error }

func (e inputError) Unwrap() error { return e.error }

// openTokensInput opens the text of --file or --ids: a regular file, or
// standard input for "-".
func openTokensInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(stdin), nil
	}
	f, _, err := inputfile.Open(path, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usagef("%s: no such file", quote.Name(path))
	}
	if err != nil {
		return nil, err // an *inputfile.Error (exit 2), or why it could not be opened
	}
	return f, nil
}

// writeIDs writes ids separated by single spaces, the first of all ids
// without one before it.
func writeIDs(out *bufio.Writer, ids []int, first bool) {
	var num [20]byte
	for i, id := range ids {
		if i > 0 || !first {
			out.WriteByte(' ')
		}
		out.Write(strconv.AppendInt(num[:0], int64(id), 10))
	}
}

// endIDs ends the line of ids, if there were any.
func endIDs(out *bufio.Writer, n int) error {
	if n > 0 {
		out.WriteByte('\n')
	}
	return nil
}

// showTokens shows the tokens of a whole text, or says why it has none.
func showTokens(out *bufio.Writer, v *corpus.Vocab, text []byte) error {
	ids, err := v.Encode(string(text))
	if err != nil {
		return err
	}
	t := newTokenTable(out, v)
	t.add(ids)
	t.text(text)
	t.summary()
	return nil
}

// tokenTable prints tokens a line each as they come, and their counts at
// the end.
type tokenTable struct {
	out               *bufio.Writer
	v                 *corpus.Vocab
	tokens            int
	seen              []bool   // by id, for the distinct count
	labels            []string // by id, made when first seen
	distinct          int
	bytes, characters int64
}

func newTokenTable(out *bufio.Writer, v *corpus.Vocab) *tokenTable {
	fmt.Fprintf(out, "%8s %7s %5s  %s\n", "#", "id", "bytes", "piece")
	return &tokenTable{out: out, v: v, seen: make([]bool, v.Size()), labels: make([]string, v.Size())}
}

func (t *tokenTable) add(ids []int) {
	for _, id := range ids {
		if !t.seen[id] {
			t.seen[id] = true
			t.distinct++
			t.labels[id] = fmt.Sprintf("%7d %5d  %s\n", id, len(t.v.Piece(id)), heatmap.Label(t.v.Label(id)))
		}
		fmt.Fprintf(t.out, "%8d ", t.tokens)
		t.out.WriteString(t.labels[id])
		t.tokens++
	}
}

// text counts the bytes and characters of the text the tokens came from.
func (t *tokenTable) text(p []byte) {
	t.bytes += int64(len(p))
	t.characters += int64(utf8.RuneCount(p))
}

func (t *tokenTable) summary() {
	per := "-"
	if t.tokens > 0 {
		per = strconv.FormatFloat(float64(t.bytes)/float64(t.tokens), 'f', 2, 64)
	}
	fmt.Fprintf(t.out, "%d tokens (%d distinct) of %d bytes, %d characters: %s bytes per token (%s, %d tokens)\n",
		t.tokens, t.distinct, t.bytes, t.characters, per, t.v.Kind(), t.v.Size())
}
