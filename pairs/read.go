package pairs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/memlimit"
)

// MaxLineBytes bounds one line of a pairs file. The longest verse of the
// built-in corpus is under 1 KB and a Tatoeba line with its attribution
// under 2 KB; a longer line means the file is not a pairs file.
const MaxLineBytes = 64 << 10

// MaxHeldBytes bounds the memory the kept pairs take while a file is read
// (as pairCost estimates it): every kept pair is held until the
// vocabularies exist, so the largest file Load opens (1 GiB) of short
// pairs took tens of gigabytes (94 MB of 3-word pairs: 2.55 GB). With
// the garbage collector's slack the peak is about twice the bound, as a
// text corpus's (docs/architecture.md); Tatoeba's English–French (230k
// pairs with their attribution) holds about 260 MiB. Where the process
// may take less (ulimit -v, a cgroup), the bound is lowered to fit
// (heldPeak).
const MaxHeldBytes = 512 << 20

// heldPeak is the process's growth (address space or memory in use) per
// byte of pairCost while a file is read, vocabularies built and pairs
// encoded (gptg data pairs), the garbage collector held to the headroom
// by the soft memory limit gptg sets: measured, VmPeak +131 MiB for 600k
// pairs of pairCost 156 MiB (0.84), +75 MiB for 221k of 57 MiB (1.3); peak
// RSS 1.3 and 1.8 times.
const heldPeak = 1.5

// pairCost estimates the bytes a kept pair holds until the corpus is
// built: a string header and then an id per word, the line's text, the
// structs around them. Measured: 5M pairs of 3+3 words peaked at 510
// bytes a pair of RSS; this gives 484.
func pairCost(p words, lineBytes int) int64 {
	return int64(160 + 48*(len(p.src)+len(p.tgt)) + 2*lineBytes)
}

// splitBuckets is the resolution of the train/test split: a pair is a
// test pair when the hash of its source sentence, modulo splitBuckets, is
// at or above split · splitBuckets.
const splitBuckets = 10000

// Options are the [data] settings that shape a pairs corpus.
type Options struct {
	Split     float64 // fraction of pairs for training, in (0, 1)
	MinCount  int     // words seen fewer times in the training pairs read as UNK
	MinSource int     // keep pairs whose source has MinSource..MaxSource words
	MaxSource int
	MaxTarget int // ... and whose target has at most MaxTarget words
}

// OptionsFor returns the Options a config's [data] table gives.
func OptionsFor(d config.Data) Options {
	return Options{Split: d.Split, MinCount: d.MinCount, MinSource: d.MinSource, MaxSource: d.MaxSource, MaxTarget: d.MaxTarget}
}

// Pair is one kept line of the file.
type Pair struct {
	Src, Tgt         []int  // word ids, without SOS or EOS
	SrcText, TgtText string // the sentences as the file has them (BLEU's references)
	Line             int    // 1-based line in the file
}

// Corpus is a pairs file read, filtered, split and encoded.
type Corpus struct {
	Path        string
	Train, Test []Pair
	Src, Tgt    *Vocab // built from the training pairs only
	Opts        Options

	// SHA256 and Size are the file's content as read (hex digest, bytes):
	// a translation run records them as data.sha256 and data.size.
	SHA256 string
	Size   int64

	Lines    int // lines read (blank lines included)
	TooShort int // pairs left out: source shorter than MinSource words
	TooLong  int // pairs left out: source longer than MaxSource or target longer than MaxTarget words
}

// Error is a problem with a pairs file, at a line when Line > 0. Its
// message is one line: "path:line: what is wrong".
type Error struct {
	Path string
	Line int
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// LoadFor reads the pairs corpus a config names (data.format = "pairs").
func LoadFor(cfg *config.Config) (*Corpus, error) {
	return Load(cfg.Data.Path, OptionsFor(cfg.Data))
}

// Load reads the tab-separated pairs file at path ("builtin:NAME" names
// one built into gptg, as corpus/builtin/README.md lists): on each line the source
// sentence, a tab, the target sentence, and optionally more tab-separated
// columns, which are ignored (the Tatoeba/Anki layout "eng\tspa\tattribution"
// and the built-in corpus's "English\tSpanish\tverse" both read this way).
// Blank lines are skipped; a UTF-8 byte order mark and CRLF line ends are
// accepted. A malformed line is an *Error naming the file and line.
//
// Pairs outside the length filter are left out and counted. The rest are
// split into train and test by a hash of the tokenized source sentence, so
// that one sentence is never on both sides and the split does not depend
// on the file's order; the vocabularies are built from the training pairs.
func Load(path string, opts Options) (*Corpus, error) {
	if err := opts.check(); err != nil {
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	if name, ok := builtin.Parse(path); ok {
		f, err := builtin.Open(name)
		if err != nil {
			return nil, &Error{Path: path, Msg: fmt.Sprintf("there is no built-in corpus %q (built in: %s)", name, strings.Join(builtin.Names(), ", ")), Err: err}
		}
		defer f.Close()
		return read(path, f, opts)
	}
	f, _, err := inputfile.Open(path, 0)
	if err != nil {
		var ie *inputfile.Error
		switch {
		case errors.As(err, &ie):
			return nil, &Error{Path: path, Msg: strings.TrimPrefix(ie.Problem, "is "), Err: err}
		case errors.Is(err, fs.ErrNotExist):
			return nil, &Error{Path: path, Msg: "no such file", Err: err}
		}
		return nil, &Error{Path: path, Msg: err.Error(), Err: err}
	}
	defer f.Close()
	return read(path, f, opts)
}

func (o Options) check() error {
	switch {
	case !(o.Split > 0 && o.Split < 1):
		return fmt.Errorf("split %v is out of range (allowed: between 0 and 1, exclusive)", o.Split)
	case o.MinCount < 1:
		return fmt.Errorf("min_count %d must be at least 1", o.MinCount)
	case o.MinSource < 1 || o.MaxSource < o.MinSource || o.MaxTarget < 1:
		return fmt.Errorf("lengths min_source %d, max_source %d, max_target %d are impossible (need 1 <= min_source <= max_source, 1 <= max_target)",
			o.MinSource, o.MaxSource, o.MaxTarget)
	}
	return nil
}

// words holds one kept line's tokens until the vocabularies exist.
type words struct {
	src, tgt         []string
	srcText, tgtText string
	line             int
}

// read does Load's work on an open file.
func read(path string, r io.Reader, opts Options) (*Corpus, error) {
	c := &Corpus{Path: path, Opts: opts}
	var train, test []words
	cut := uint64(math.Round(opts.Split * splitBuckets))
	h := &hashing{h: sha256.New()}
	var held int64
	bound := memlimit.Cap(MaxHeldBytes, heldPeak)
	// fit is the last line at which the kept pairs took at most
	// bound.Safe(), what a refusal under a process limit suggests reading:
	// the headroom differs from one run to the next (threads come and go),
	// and a prefix cut at the bound itself could be refused again.
	fit := 0
	br := bufio.NewReaderSize(io.TeeReader(r, h), 64<<10)
	for {
		raw, err := readLine(br)
		if len(raw) == 0 && err == io.EOF {
			break
		}
		c.Lines++
		if err != nil && err != io.EOF {
			if errors.Is(err, errLineTooLong) {
				return nil, &Error{Path: path, Line: c.Lines, Msg: fmt.Sprintf("line is longer than %d bytes (a pairs file has one sentence pair per line)", MaxLineBytes)}
			}
			return nil, &Error{Path: path, Line: c.Lines, Msg: "reading: " + err.Error(), Err: err}
		}
		p, keep, perr := parseLine(raw, c.Lines == 1)
		if perr != "" {
			return nil, &Error{Path: path, Line: c.Lines, Msg: perr}
		}
		if keep {
			p.line = c.Lines
			switch n := len(p.src); {
			case n < opts.MinSource:
				c.TooShort++
			case n > opts.MaxSource || len(p.tgt) > opts.MaxTarget:
				c.TooLong++
			case testSide(p.src, cut):
				test = append(test, p)
				held += pairCost(p, len(raw))
			default:
				train = append(train, p)
				held += pairCost(p, len(raw))
			}
			if float64(held) > bound.Bytes {
				if bound.Limit == "" { // the fixed bound is the same every time
					fit = c.Lines - 1
				}
				return nil, &Error{Path: path, Line: c.Lines, Msg: tooManyPairs(len(train)+len(test), held, bound, fit)}
			}
			if float64(held) <= bound.Safe() {
				fit = c.Lines
			}
		}
		if err == io.EOF {
			break
		}
	}
	if c.Lines == 0 || len(train)+len(test)+c.TooShort+c.TooLong == 0 {
		return nil, &Error{Path: path, Msg: "has no sentence pairs (expected lines of SOURCE<tab>TARGET)"}
	}
	kept := len(train) + len(test)
	if kept == 0 {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("no pair passes the length filter (%d..%d source words, at most %d target words): %d too short, %d too long",
			opts.MinSource, opts.MaxSource, opts.MaxTarget, c.TooShort, c.TooLong)}
	}
	if len(train) == 0 || len(test) == 0 {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("%d pairs kept, too few to split into training and test pairs at split %v (%d train, %d test)",
			kept, opts.Split, len(train), len(test))}
	}

	c.SHA256, c.Size = hex.EncodeToString(h.h.Sum(nil)), h.n

	c.Src = BuildVocab(column(train, true), opts.MinCount)
	c.Tgt = BuildVocab(column(train, false), opts.MinCount)
	c.Train = c.encode(train)
	c.Test = c.encode(test)
	return c, nil
}

// tooManyPairs is the refusal of the pair that takes the kept pairs past
// bound, with the lines before it that fit.
func tooManyPairs(kept int, held int64, bound memlimit.Bound, fit int) string {
	msg := fmt.Sprintf("the %d pairs kept up to here take about %d MiB of memory, more than %s (gptg holds every kept pair while it reads): ",
		kept, held>>20, bound.Exceeded("a pairs corpus may"))
	if fit < 1 {
		return msg + "give the process more memory"
	}
	msg += fmt.Sprintf("train on a part of the file (head -n %d), or keep fewer pairs with data.max_source and data.max_target", fit)
	if bound.Limit != "" {
		msg += ", or give the process more memory"
	}
	return msg
}

// hashing digests and counts the bytes written to it.
type hashing struct {
	h hash.Hash
	n int64
}

func (w *hashing) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return w.h.Write(p)
}

func column(ws []words, source bool) [][]string {
	out := make([][]string, len(ws))
	for i, w := range ws {
		if source {
			out[i] = w.src
		} else {
			out[i] = w.tgt
		}
	}
	return out
}

func (c *Corpus) encode(ws []words) []Pair {
	ps := make([]Pair, len(ws))
	for i, w := range ws {
		ps[i] = Pair{Src: c.Src.Encode(w.src), Tgt: c.Tgt.Encode(w.tgt), SrcText: w.srcText, TgtText: w.tgtText, Line: w.line}
	}
	return ps
}

// testSide reports whether a source sentence belongs to the test split:
// FNV-1a (64 bit) of its words joined by spaces, modulo splitBuckets, at
// or above cut. It depends on the sentence alone, so a sentence that occurs
// twice in the file (with two translations) is on one side only.
func testSide(src []string, cut uint64) bool {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(src, " ")))
	return h.Sum64()%splitBuckets >= cut
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its "\n", or err == io.EOF with
// the last line when the file does not end in a newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLineBytes+1 { // +1: the newline itself
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return line[:len(line)-1], nil
		default:
			return line, err
		}
	}
}

// parseLine splits one line into its two tokenized sentences. keep is
// false for a blank line; problem is a one-line message for a bad one.
func parseLine(raw []byte, first bool) (p words, keep bool, problem string) {
	if first {
		raw = bytes.TrimPrefix(raw, []byte("\uFEFF"))
	}
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		return p, false, fmt.Sprintf("a NUL byte at column %d: this looks like a binary file, not tab-separated text", i+1)
	}
	if !utf8.Valid(raw) {
		i := invalidAt(raw)
		return p, false, fmt.Sprintf("not valid UTF-8 (byte 0x%02x at column %d); a pairs file must be UTF-8 text", raw[i], i+1)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return p, false, ""
	}
	src, rest, ok := strings.Cut(string(raw), "\t")
	if !ok {
		return p, false, "no tab: each line is SOURCE<tab>TARGET (more tab-separated columns are ignored)"
	}
	tgt, _, _ := strings.Cut(rest, "\t")
	p.srcText, p.tgtText = strings.TrimSpace(src), strings.TrimSpace(tgt)
	p.src, p.tgt = Tokenize(p.srcText), Tokenize(p.tgtText)
	switch {
	case p.srcText == "":
		return p, false, "the source sentence (before the first tab) is empty"
	case p.tgtText == "":
		return p, false, "the target sentence (after the first tab) is empty"
	}
	return p, true, ""
}

// invalidAt is the offset of the first byte of b that is not valid UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}
