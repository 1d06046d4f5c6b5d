// Package builtin holds the corpora that ship inside gptg, so that the
// first command works on a machine without internet access. A config
// names one as data.path = "builtin:NAME"; NAME is the file's name
// without its extension. README.md beside this file says where each one
// comes from and under which licence.
//
// Adding a corpus: put the file here, add one //go:embed line below, a
// row to README.md and its name to config.BuiltinCorpora (tests insist on
// both; config keeps its own list so as not to link the embedded text).
package builtin

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

// Prefix marks a built-in corpus in data.path: "builtin:tinyshakespeare".
const Prefix = "builtin:"

//go:embed tinyshakespeare.txt
//go:embed toy.txt
//go:embed bible-en-es.tsv
var files embed.FS

// Corpus is one built-in corpus.
type Corpus struct {
	Name   string // "tinyshakespeare"
	File   string // "tinyshakespeare.txt", the file beside this one
	Size   int64  // bytes
	SHA256 string // hex digest of the content
}

// Path is how a config names the corpus: "builtin:" + its name.
func (c Corpus) Path() string { return Prefix + c.Name }

// all lists the corpora, sorted by name. Their digests are computed on
// first use (about 3 ms for the 1.3 MB built in).
var all = sync.OnceValue(func() []Corpus {
	entries, err := files.ReadDir(".")
	if err != nil {
		panic(err) // the embedded tree always has a root
	}
	var out []Corpus
	for _, e := range entries {
		data, err := files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(data)
		out = append(out, Corpus{
			Name:   strings.TrimSuffix(e.Name(), path.Ext(e.Name())),
			File:   e.Name(),
			Size:   int64(len(data)),
			SHA256: hex.EncodeToString(sum[:]),
		})
	}
	slices.SortFunc(out, func(a, b Corpus) int { return strings.Compare(a.Name, b.Name) })
	return out
})

// All returns every built-in corpus, sorted by name.
func All() []Corpus { return slices.Clone(all()) }

// Names returns the names of the built-in corpora, sorted. It reads only
// the folder: the train command's help text calls it as gptg starts, and
// copying and hashing 3.6 MB there cost every command its start (and ran
// out of memory before main under a tight ulimit -v).
func Names() []string {
	entries, err := files.ReadDir(".")
	if err != nil {
		panic(err) // the embedded tree always has a root
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), path.Ext(e.Name())))
	}
	slices.Sort(names)
	return names
}

// Parse says whether a data.path names a built-in corpus, and which:
// "builtin:toy" gives ("toy", true). The name may not exist; Lookup says.
func Parse(dataPath string) (name string, ok bool) {
	return strings.CutPrefix(dataPath, Prefix)
}

// Lookup finds a built-in corpus by name.
func Lookup(name string) (Corpus, bool) {
	for _, c := range all() {
		if c.Name == name {
			return c, true
		}
	}
	return Corpus{}, false
}

// BySHA256 finds the built-in corpus with the given content, so that a
// run trained on a downloaded copy of a built-in corpus still finds it.
func BySHA256(sum string) (Corpus, bool) {
	sum = strings.ToLower(sum)
	for _, c := range all() {
		if c.SHA256 == sum {
			return c, true
		}
	}
	return Corpus{}, false
}

// File is an open built-in corpus: it reads and seeks like an *os.File
// without copying the embedded bytes.
type File interface {
	io.ReadSeeker
	io.Closer
}

// Open opens the named built-in corpus. The error wraps fs.ErrNotExist
// when there is no such corpus.
func Open(name string) (File, error) {
	c, ok := Lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: Prefix + name, Err: fs.ErrNotExist}
	}
	f, err := files.Open(c.File)
	if err != nil {
		return nil, err
	}
	return f.(File), nil // embed's files implement io.Seeker
}

// Bytes returns a copy of the named corpus's content.
func Bytes(name string) ([]byte, error) {
	c, ok := Lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: Prefix + name, Err: fs.ErrNotExist}
	}
	return files.ReadFile(c.File)
}
