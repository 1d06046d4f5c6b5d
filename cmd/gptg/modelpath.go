package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/train"
)

// modelPath resolves the MODEL argument of sample, eval, inspect and
// attention: a model file as given, or a run folder, whose
// model.safetensors is the model. Anything else is left to the model
// file reader, which says what is wrong with it.
func modelPath(arg string) (string, error) {
	info, err := os.Stat(arg)
	if err == nil && !info.IsDir() && strings.EqualFold(filepath.Ext(arg), ".toml") {
		return "", notAModel(arg)
	}
	if err != nil || !info.IsDir() {
		return arg, nil
	}
	path := filepath.Join(arg, train.ModelFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if runs := runsInside(arg); len(runs) > 0 {
			return "", usagef("%s holds %d run folders, not a model: give one of them (%s)", arg, len(runs), listSome(runs, 3))
		}
		return "", fmt.Errorf("%s is a folder without %s: give a model file or a run folder", arg, train.ModelFile)
	}
	return path, nil
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
