package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/train"
)

// modelPath resolves the MODEL argument of sample, eval, inspect and
// attention: a model file as given, or a run folder, whose
// model.safetensors is the model. Anything else is left to the model
// file reader, which says what is wrong with it.
//
// What is not a model at all — a missing path, a config, a folder without
// a model, a file of another kind — is a usage error (exit 2), like any
// other wrong argument; a model file that is damaged is the reader's to
// report (exit 1).
func modelPath(arg string) (string, error) {
	info, err := os.Stat(arg)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(arg); lerr == nil {
			return "", usagef("%s is a symbolic link that leads nowhere: give a model file or a run folder", quote.Name(arg))
		}
		return "", usagef("%s: no such model file or run folder", quote.Name(arg))
	case errors.Is(err, syscall.ELOOP):
		return "", usagef("%s is a loop of symbolic links: give a model file or a run folder", quote.Name(arg))
	case err != nil:
		return arg, nil // the reader says what is wrong (permissions)
	case !info.IsDir() && strings.EqualFold(filepath.Ext(arg), ".toml"):
		return "", notAModel(arg)
	case !info.IsDir():
		if kind := notModelKind(arg, info); kind != "" {
			return "", usagef("%s is %s, not a model file: give a model file (.safetensors) or a run folder", quote.Name(arg), kind)
		}
		return arg, nil
	}
	path := filepath.Join(arg, train.ModelFile)
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return "", usagef("%s is a folder, not a model file: the run folder %s is damaged", quote.Name(path), quote.Name(arg))
	} else if err == nil && info.Mode()&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeSocket) != 0 {
		return "", usagef("%s is %s, not a model file: the run folder %s is damaged", quote.Name(path), inputfile.Kind(info.Mode()), quote.Name(arg))
	} else if errors.Is(err, fs.ErrNotExist) {
		if runs := runsInside(arg); len(runs) > 0 {
			return "", usagef("%s holds %d run folders, not a model: give one of them (%s)", arg, len(runs), listSome(runs, 3))
		}
		if _, err := os.Stat(filepath.Join(arg, train.CheckpointFile)); err == nil {
			return "", usagef("%s is a run folder without %s (killed before it was written?): `gptg train --resume %s` writes it from the checkpoint, or continues the training", quote.Name(arg), train.ModelFile, quote.Name(arg))
		}
		return "", usagef("%s is a folder without %s: give a model file or a run folder", quote.Name(arg), train.ModelFile)
	}
	return path, nil
}

// notModelKind names what a file given as a model is when it is plainly
// something else: a device or FIFO, a zip archive (a PyTorch checkpoint),
// a pickle or text. "" leaves the file to the model file reader, which
// reports a damaged model in detail.
func notModelKind(path string, info fs.FileInfo) string {
	m := info.Mode()
	switch {
	case m&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeSocket) != 0:
		return inputfile.Kind(m)
	case !m.IsRegular():
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head [16]byte
	n, _ := io.ReadFull(f, head[:])
	b := head[:n]
	switch {
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return "a zip archive (a nanoGPT checkpoint? gptg import nanogpt makes a model file of it)"
	case len(b) > 1 && b[0] == 0x80 && b[1] <= 5:
		return "a Python pickle"
	case n >= 9 && bytes.IndexByte(b, 0) < 0 && utf8.Valid(b[:n-3]):
		return "a text file"
	}
	return ""
}

// runsInside lists the folders directly inside dir that hold a model, as
// an ablation writes them (NAME/seed-S, or a config's folder per seed), in
// natural order (seed-2 before seed-10).
func runsInside(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var runs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(p, train.ModelFile)); err == nil {
			runs = append(runs, p)
		}
	}
	slices.SortFunc(runs, naturalCompare)
	return runs
}

// naturalCompare orders names with numbers by their value: seed-2 < seed-10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da != "" && db != "" {
			if c := cmp.Compare(len(strings.TrimLeft(da, "0")), len(strings.TrimLeft(db, "0"))); c != 0 {
				return c
			}
			if c := strings.Compare(strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")); c != 0 {
				return c
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// listSome names the first n of items and how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, … and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// notAModel says that a config was given where a model is expected, and
// where its model is (or how to make it): exit 2, before anything else is
// asked for.
func notAModel(arg string) error {
	out := "its run folder"
	if cfg, err := config.Load(arg, nil); err == nil && cfg.Train.Out != "" {
		out = cfg.Train.Out
		if _, err := os.Stat(filepath.Join(out, train.ModelFile)); err == nil {
			return usagef("%s is a config, not a model: its trained model is in %s (give that run folder)", arg, out)
		}
	}
	return usagef("%s is a config, not a model: train it first (gptg train %s), then give %s", arg, arg, out)
}

// runConfigPath is where train writes the config beside a model file.
func runConfigPath(model string) string {
	return filepath.Join(filepath.Dir(model), train.ConfigFile)
}

// runConfig loads the config.toml beside a model file, or returns nil when
// there is none (a model file outside a run folder). why says what it is
// read for, so that a broken config.toml names itself and the purpose.
func runConfig(model, why string) (*config.Config, error) {
	path := runConfigPath(model)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		return nil, fmt.Errorf("reading %s for %s: %w", path, why, err)
	}
	return cfg, nil
}
