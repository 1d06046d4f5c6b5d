package train

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/tokenfile"
)

// A run folder records its corpus twice. By content: data.sha256 and
// data.size in config.toml, which train fills in when the config left them
// out; they are the corpus's identity, and a corpus that differs is
// refused. By place: where data.path led and which config the run came
// from, in comment lines at the top of config.toml (corpusOrigin); those
// are only hints of where to look, so that `gptg eval RUN` and
// `gptg train --resume RUN` work from any working directory and after the
// project folder moved.

// The comment lines of config.toml that hold a corpusOrigin; each value is
// a Go-quoted string, so that any path survives the round trip.
const (
	dataFilePrefix   = "# data file: "
	fromRunPrefix    = "# data file from this folder: "
	valFilePrefix    = "# validation file: "
	valFromRunPrefix = "# validation file from this folder: "
	madeFromPrefix   = "# made from config: "
)

// corpusOrigin is where a run's corpus and config were when it started.
type corpusOrigin struct {
	File     string // absolute path of the data file; "" for a built-in corpus
	FromRun  string // File relative to the run folder
	MadeFrom string // absolute path of the config the run started from
	// ValFile and ValFromRun are File and FromRun of the validation token
	// file (data.val_path), "" for a corpus without one.
	ValFile, ValFromRun string
}

// newOrigin notes where the corpus of d (its paths as the config gives
// them) and the config at cfgPath are, seen from the run folder dir.
func newOrigin(d config.Data, cfgPath, dir string) corpusOrigin {
	var o corpusOrigin
	if cfgPath != "" {
		o.MadeFrom, _ = filepath.Abs(cfgPath)
	}
	o.setFile(d.Path, dir)
	if d.Format == config.FormatTokens {
		o.setValFile(d.ValPath, dir)
	}
	return o
}

// setFile notes that the corpus is at path now (a built-in corpus has no
// place to note).
func (o *corpusOrigin) setFile(path, dir string) {
	if _, ok := builtin.Parse(path); ok {
		o.File, o.FromRun = "", ""
		return
	}
	o.File, o.FromRun = placeOf(path, dir)
}

// setValFile notes that the validation token file is at path now ("":
// the corpus has none).
func (o *corpusOrigin) setValFile(path, dir string) {
	o.ValFile, o.ValFromRun = "", ""
	if path != "" {
		o.ValFile, o.ValFromRun = placeOf(path, dir)
	}
}

// placeOf is path made absolute, and relative to the run folder dir ("" when
// either cannot be said).
func placeOf(path, dir string) (abs, fromRun string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", ""
	}
	if d, err := filepath.Abs(dir); err == nil {
		if rel, err := filepath.Rel(d, abs); err == nil {
			fromRun = rel
		}
	}
	return abs, fromRun
}

// header renders o as config.toml's comment lines.
func (o corpusOrigin) header() string {
	var b strings.Builder
	if o.File != "" {
		fmt.Fprintf(&b, "%s%s (where data.path led when the run started; gptg eval and train --resume look there too)\n", dataFilePrefix, strconv.Quote(o.File))
	}
	if o.FromRun != "" {
		fmt.Fprintf(&b, "%s%s\n", fromRunPrefix, strconv.Quote(o.FromRun))
	}
	if o.ValFile != "" {
		fmt.Fprintf(&b, "%s%s\n", valFilePrefix, strconv.Quote(o.ValFile))
	}
	if o.ValFromRun != "" {
		fmt.Fprintf(&b, "%s%s\n", valFromRunPrefix, strconv.Quote(o.ValFromRun))
	}
	if o.MadeFrom != "" {
		fmt.Fprintf(&b, "%s%s\n", madeFromPrefix, strconv.Quote(o.MadeFrom))
	}
	return b.String()
}

// readOrigin finds the comment lines of a corpusOrigin in a config.toml's
// text; lines that are missing or mangled leave their field empty (they
// are hints, and a folder from before them has none).
func readOrigin(text []byte) corpusOrigin {
	var o corpusOrigin
	fields := map[string]*string{dataFilePrefix: &o.File, fromRunPrefix: &o.FromRun, madeFromPrefix: &o.MadeFrom,
		valFilePrefix: &o.ValFile, valFromRunPrefix: &o.ValFromRun}
	for line := range strings.Lines(string(text)) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		for prefix, field := range fields {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				if q, err := strconv.QuotedPrefix(rest); err == nil {
					*field, _ = strconv.Unquote(q)
				}
			}
		}
	}
	return o
}

// OriginFrom gives a config.toml's text with the absolute paths of its
// origin lines (the data file, the validation file, the config the run
// came from) made relative to base when they lie under it, as a person
// who started the run from base typed them: gptg serve shows a run's
// config so, from the folder its run ids start from, rather than the
// paths of one machine.
func OriginFrom(text, base string) string {
	var b strings.Builder
	header := true
	for line := range strings.Lines(text) {
		header = header && strings.HasPrefix(line, "#")
		for _, prefix := range []string{dataFilePrefix, valFilePrefix, madeFromPrefix} {
			rest, ok := strings.CutPrefix(line, prefix)
			if !header || !ok {
				continue
			}
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			p, _ := strconv.Unquote(q)
			if rel, err := filepath.Rel(base, p); err == nil && filepath.IsAbs(p) && filepath.IsLocal(rel) {
				line = prefix + strconv.Quote(rel) + rest[len(q):]
			}
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// FindCorpus says where the corpus of the run in dir is now, whatever the
// working directory: cfg is the run's config.toml, loaded. It is the first
// of these that holds the run's corpus (data.sha256 and data.size; a run
// from before they were recorded takes the first that exists):
//
//   - data.path as the config means it (relative to the working directory);
//   - the data file's absolute path when the run started;
//   - that file's path relative to the run folder, then data.path relative
//     to the run folder (a project folder that moved as a whole, a run
//     folder shipped with its corpus inside);
//   - data.path relative to the folder of the config the run came from,
//     and to the folders above it;
//   - the file's name beside the run folder, then inside it (a corpus
//     moved next to its runs);
//   - the built-in corpus with the same content.
//
// A file that is there but holds other text is refused with both digests.
// When none is found and data.url is set, data.path is returned: loading
// downloads it (and checks it against data.sha256).
func FindCorpus(dir string, cfg *config.Config) (string, error) {
	text, _ := inputfile.ReadFile(filepath.Join(dir, ConfigFile), config.MaxConfigSize) // hints only
	return findCorpus(dir, cfg.Data, readOrigin(text))
}

// FindValidation is FindCorpus for the validation token file of a run on
// token files (data.val_path, recorded by data.val_sha256 and
// data.val_size); "" for a run on a text.
func FindValidation(dir string, cfg *config.Config) (string, error) {
	text, _ := inputfile.ReadFile(filepath.Join(dir, ConfigFile), config.MaxConfigSize) // hints only
	return findValidation(dir, cfg.Data, readOrigin(text))
}

func findValidation(dir string, d config.Data, o corpusOrigin) (string, error) {
	if d.Format != config.FormatTokens {
		return "", nil
	}
	val := config.Data{Path: d.ValPath, SHA256: d.ValSHA256, Size: d.ValSize, Format: d.Format, Prepare: d.Prepare}
	return findCorpus(dir, val, corpusOrigin{File: o.ValFile, FromRun: o.ValFromRun, MadeFrom: o.MadeFrom})
}

func findCorpus(dir string, d config.Data, o corpusOrigin) (string, error) {
	want := content{sum: d.SHA256, size: d.Size}
	if name, ok := builtin.Parse(d.Path); ok {
		c, ok := builtin.Lookup(name)
		if !ok {
			return "", fmt.Errorf("the corpus of run %s is %s, which this gptg does not have (built in: %s)", dir, d.Path, strings.Join(builtin.Names(), ", "))
		}
		if got := (content{c.SHA256, c.Size}); !got.matches(want) {
			return "", changedError(dir, d.Path, got, want)
		}
		return d.Path, nil
	}
	candidates, named, last := corpusPlaces(dir, d, o)

	digest := corpus.Digest
	if d.Format == config.FormatTokens {
		digest = tokenDigest
	}
	var firstOther string // the first file there that holds other text
	var other content
	for _, path := range candidates {
		info, err := os.Stat(path)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if want.sum == "" && want.size == 0 {
			return path, nil // nothing recorded to check it against
		}
		got := content{size: info.Size()}
		if want.size == 0 || got.size == want.size { // a different size needs no digest
			if got.sum, got.size, err = digest(path); err != nil {
				continue
			}
		}
		if got.matches(want) {
			return path, nil
		}
		if firstOther == "" {
			firstOther, other = path, got
		}
	}
	if c, ok := builtin.BySHA256(want.sum); ok && want.sum != "" && (content{c.SHA256, c.Size}).matches(want) {
		return c.Path(), nil
	}
	if firstOther != "" {
		if other.sum == "" { // its size told it apart; name its digest all the same
			other.sum, other.size, _ = digest(firstOther)
		}
		return "", changedError(dir, firstOther, other, want)
	}
	if d.URL != "" || d.Prepare != "" { // downloaded or prepared again when loaded
		return d.Path, nil
	}
	return "", notFoundError(dir, d, o, want, candidates, named, last)

}

// corpusPlaces lists, without repeats, the places findCorpus looks for
// the corpus of the run in dir, in its order: the first named of them
// are the ones a "not found" lists one by one, from last on the file's
// name beside the run folder and inside it.
func corpusPlaces(dir string, d config.Data, o corpusOrigin) (candidates []string, named, last int) {
	var seen []string
	add := func(path string) {
		abs, err := filepath.Abs(path)
		if path == "" || err != nil || slices.Contains(seen, abs) {
			return
		}
		seen = append(seen, abs)
		candidates = append(candidates, path)
	}
	add(d.Path)
	add(o.File)
	if o.FromRun != "" && !filepath.IsAbs(o.FromRun) {
		add(filepath.Join(dir, o.FromRun))
	}
	named = len(candidates) // the places an error lists one by one
	if !filepath.IsAbs(d.Path) {
		add(filepath.Join(dir, d.Path))
		named = len(candidates)
		if o.MadeFrom != "" {
			for folder := filepath.Dir(o.MadeFrom); ; folder = filepath.Dir(folder) {
				add(filepath.Join(folder, d.Path))
				if filepath.Dir(folder) == folder {
					break
				}
			}
		}
	}
	// Last, the file's name beside the run folder and inside it: a corpus
	// moved next to its runs (runs/tiny.txt for runs/c) or into one.
	name := filepath.Base(d.Path)
	beside, inside := filepath.Join(filepath.Dir(filepath.Clean(dir)), name), filepath.Join(dir, name)
	last = len(candidates)
	add(beside)
	add(inside)
	return candidates, named, last
}

// notFoundError says where findCorpus looked for a corpus it did not find
// (candidates, as corpusPlaces gave them).
func notFoundError(dir string, d config.Data, o corpusOrigin, want content, candidates []string, named, last int) error {
	where := "it is not at " + strings.Join(candidates[:named], ", ")
	if !filepath.IsAbs(d.Path) && o.MadeFrom != "" {
		where += fmt.Sprintf(", nor under the folder of %s or those above it", o.MadeFrom)
	}
	if len(candidates) > last {
		where += fmt.Sprintf(", nor by its name beside or in the run folder (%s)", strings.Join(candidates[last:], ", "))
	}
	what := ""
	if want != (content{}) {
		what = " (" + want.String() + ")"
	}
	return fmt.Errorf("the corpus of run %s%s is not found: %s; put it back at %s",
		dir, what, where, d.Path)
}

// tokenDigest is corpus.Digest of a token file, which may be larger than
// a text corpus may be.
func tokenDigest(path string) (string, int64, error) {
	f, err := tokenfile.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sum, err := f.Check(context.Background(), tokenfile.MaxVocab)
	return sum, f.Size(), err
}

// content is what a corpus is: its SHA-256 and its size in bytes ("" and
// 0 when not known).
type content struct {
	sum  string
	size int64
}

// matches says whether c can be the corpus want records.
func (c content) matches(want content) bool {
	return (want.sum == "" || c.sum == want.sum) && (want.size == 0 || c.size == want.size)
}

func (c content) String() string {
	switch {
	case c.sum == "":
		return fmt.Sprintf("%d bytes", c.size)
	case c.size == 0:
		return "sha256 " + c.sum
	}
	return fmt.Sprintf("sha256 %s, %d bytes", c.sum, c.size)
}

// CorpusChangedError is a run's corpus whose content is not the one the
// run recorded (data.sha256, data.size): bad input, which gptg answers
// with exit code 2.
type CorpusChangedError struct {
	Path, Dir string  // the file found and the run folder
	got, want content // what the file holds and what the run recorded
}

func (e *CorpusChangedError) Error() string {
	return fmt.Sprintf("%s is not the corpus run %s was trained on: it has %s, the run's has %s (data.sha256 and data.size in %s); put the run's corpus back",
		e.Path, e.Dir, e.got, e.want, filepath.Join(e.Dir, ConfigFile))
}

// changedError refuses a corpus that is not the run's, naming both.
func changedError(dir, path string, got, want content) error {
	return &CorpusChangedError{Path: path, Dir: dir, got: got, want: want}
}

// recordCorpus writes the run's record of its corpus into its config: its
// content, checked whenever the run is resumed or evaluated, and where it
// was.
func (t *trainer) recordCorpus() {
	d := &t.cfg.Data
	if d.SHA256 == "" {
		d.SHA256 = t.data.SHA256
	}
	if d.Size == 0 {
		d.Size = t.data.Size
	}
	if d.Format == config.FormatTokens {
		if d.ValSHA256 == "" {
			d.ValSHA256 = t.data.ValSHA256
		}
		if d.ValSize == 0 {
			d.ValSize = t.data.ValSize
		}
	}
	t.origin = newOrigin(*d, t.cfg.Path, t.dir)
}
