// Package recipe makes the token files of nanoGPT's data recipes (its
// data/<name>/prepare.py scripts) from the corpora built into gptg: the
// same ids, byte for byte, without Python, tiktoken or a download.
// `gptg data prepare NAME` runs one, and so does the first run of a
// config with data.prepare = "NAME" (nanoGPT's train.bin and val.bin at
// data.path and data.val_path).
package recipe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/tokenfile"
)

// Recipe is one of nanoGPT's data recipes.
type Recipe struct {
	Name  string // data/<Name>/prepare.py, data.prepare's value
	About string // one line for gptg data prepare --help
	// Tokenizer is the data.tokenizer whose ids it writes.
	Tokenizer string
	// make returns the training and validation ids.
	make func() (train, val []int, err error)
}

// All lists the recipes (config.PrepareRecipes names the same).
var All = []Recipe{
	{Name: "shakespeare", Tokenizer: "gpt2", make: shakespeare,
		About: "tiny-shakespeare's first 90% of characters and the rest, GPT-2's tokens (301,966 and 36,059)"},
}

// Lookup finds a recipe by name.
func Lookup(name string) (Recipe, bool) {
	i := slices.IndexFunc(All, func(r Recipe) bool { return r.Name == name })
	if i < 0 {
		return Recipe{}, false
	}
	return All[i], true
}

// Counts are the tokens a recipe wrote.
type Counts struct{ Train, Val int }

// Write runs the recipe and writes its token files at trainPath and
// valPath. Both appear or neither: the validation file is written while
// the training file is still a temporary one (internal/atomicfile), so an
// error or a signal leaves no training file without its validation file.
// Paths are taken through atomicfile's rule: a link is written through, a
// folder or a device is refused.
func (r Recipe) Write(trainPath, valPath string) (Counts, error) {
	train, val, err := r.make()
	if err != nil {
		return Counts{}, err
	}
	err = atomicfile.Write(trainPath, func(w io.Writer) error {
		if err := tokenfile.Encode(w, train); err != nil {
			return err
		}
		return tokenfile.Write(valPath, val)
	})
	return Counts{len(train), len(val)}, err
}

// shakespeare is nanoGPT's data/shakespeare/prepare.py on input.txt,
// which is gptg's built-in tiny-shakespeare:
//
//	n = len(data)                       # characters (code points)
//	train_data = data[:int(n*0.9)]
//	val_data = data[int(n*0.9):]
//	enc = tiktoken.get_encoding("gpt2")
//	train_ids = enc.encode_ordinary(train_data)
//	val_ids = enc.encode_ordinary(val_data)
//
// each split encoded on its own (a word cut by the split is two pieces).
// bpe's GPT-2 encoding is tiktoken's encode_ordinary: "<|endoftext|>" in
// the text would be text, not the special token.
func shakespeare() ([]int, []int, error) {
	text, err := builtin.Bytes("tinyshakespeare")
	if err != nil {
		return nil, nil, err
	}
	enc, err := bpe.GPT2()
	if err != nil {
		return nil, nil, err
	}
	cut := cutChars(string(text), 0.9)
	return enc.Encode(string(text[:cut])), enc.Encode(string(text[cut:])), nil
}

// cutChars is the byte offset in text of Python's data[:int(n*split)],
// n the number of characters (code points) of text: the float64 product
// truncated, as Python computes it.
func cutChars(text string, split float64) int {
	keep := charsKept(utf8.RuneCountInString(text), split)
	for i := range text {
		if keep == 0 {
			return i
		}
		keep--
	}
	return len(text)
}

// charsKept is how many of n characters Python's data[:int(n*split)]
// keeps: the float64 product truncated.
func charsKept(n int, split float64) int { return int(float64(n) * split) }

// missing refuses to make one of a recipe's files beside the other.
func missing(path, other string) error {
	return &tokenfile.Error{Path: path, Problem: fmt.Sprintf("is missing and %s is there: data.prepare writes both and replaces neither; remove %s, or put %s back",
		quote.Name(other), quote.Name(other), quote.Name(path))}
}

// EnsureFiles makes the token files of d (data.path, data.val_path) with
// data.prepare's recipe when both are missing, saying so on log; files
// that are there are left alone, to be checked by whoever reads them.
func EnsureFiles(d config.Data, log io.Writer) error {
	if d.Format != config.FormatTokens || d.Prepare == "" {
		return nil
	}
	r, ok := Lookup(d.Prepare)
	if !ok {
		return fmt.Errorf("data.prepare: there is no recipe %q", d.Prepare) // config refused it already
	}
	_, errTrain := os.Lstat(d.Path)
	_, errVal := os.Lstat(d.ValPath)
	trainMissing, valMissing := errors.Is(errTrain, fs.ErrNotExist), errors.Is(errVal, fs.ErrNotExist)
	switch {
	case trainMissing && !valMissing:
		return missing(d.Path, d.ValPath)
	case valMissing && !trainMissing:
		return missing(d.ValPath, d.Path)
	case !trainMissing:
		return nil
	}
	fmt.Fprintf(log, "%s and %s are missing: preparing them with nanoGPT's %s recipe (gptg data prepare %s)\n", quote.Name(d.Path), quote.Name(d.ValPath), r.Name, r.Name)
	made, err := makeFolders(d.Path, d.ValPath)
	if err != nil {
		return err
	}
	n, err := r.Write(d.Path, d.ValPath)
	if err != nil {
		for _, dir := range slices.Backward(made) {
			os.Remove(dir)
		}
		return fmt.Errorf("preparing %s: %w", quote.Name(d.Path), err)
	}
	fmt.Fprintf(log, "wrote %s (%d tokens) and %s (%d tokens)\n", quote.Name(d.Path), n.Train, quote.Name(d.ValPath), n.Val)
	return nil
}

// makeFolders makes the missing folders of the files at paths, and
// returns those it made, outermost first.
func makeFolders(paths ...string) ([]string, error) {
	var made []string
	for _, p := range paths {
		var missing []string
		for d := filepath.Dir(filepath.Clean(p)); filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); err == nil {
				break
			}
			missing = append(missing, d)
		}
		for _, d := range slices.Backward(missing) {
			if err := os.Mkdir(d, 0o755); err != nil {
				for _, m := range slices.Backward(made) {
					os.Remove(m)
				}
				return nil, err
			}
			made = append(made, d)
		}
	}
	return made, nil
}
