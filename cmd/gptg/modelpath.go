package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/train"
)

// modelPath resolves the MODEL argument of sample, eval, inspect and
// attention: a model file as given, or a run folder, whose
// model.safetensors is the model. Anything else is left to the model
// file reader, which says what is wrong with it.
func modelPath(arg string) (string, error) {
	info, err := os.Stat(arg)
	if err != nil || !info.IsDir() {
		return arg, nil
	}
	path := filepath.Join(arg, train.ModelFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s is a folder without %s: give a model file or a run folder", arg, train.ModelFile)
	}
	return path, nil
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
