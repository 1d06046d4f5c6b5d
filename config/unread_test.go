package config

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigTOMLIsAccepted: the config.toml a run writes (every key
// written out, derived defaults resolved) loads again, for every config
// the repository ships and for the encoder–decoder settings whose
// defaults are derived (checkUnread accepts a derived value, refuses any
// other). A resume reads that file: refusing it would strand the run.
func TestConfigTOMLIsAccepted(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../configs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".toml") && filepath.Base(filepath.Dir(path)) != "sweeps" {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 10 {
		t.Fatalf("configs: %d files, %v", len(files), err)
	}
	type loaded struct {
		path string
		sets []string
	}
	var cases []loaded
	for _, f := range files {
		cases = append(cases, loaded{f, nil})
	}
	en := "../configs/translate/en-es-seed.toml"
	cases = append(cases,
		loaded{en, []string{"model.positions=learned", "model.context=40"}},
		loaded{en, []string{"model.blocks=3", "model.encoder_blocks=0"}},
		loaded{en, []string{"model.ff_mult=2", "model.ff_hidden=0"}},
		loaded{en, []string{"data.max_source=30"}},
		loaded{"../configs/shakespeare.toml", []string{"train.schedule=noam", "train.lr=0.001"}},
	)
	for _, tc := range cases {
		c, err := Load(tc.path, tc.sets)
		if err != nil {
			t.Errorf("%s %v: %v", tc.path, tc.sets, err)
			continue
		}
		text, err := c.TOML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("config.toml", text)
		if err != nil {
			t.Errorf("%s %v: its config.toml is refused: %v", tc.path, tc.sets, err)
			continue
		}
		if back.Data != c.Data || back.Model != c.Model || back.Train != c.Train || back.Sample != c.Sample {
			t.Errorf("%s %v: config.toml reads back as %+v, want %+v", tc.path, tc.sets, back.Model, c.Model)
		}
	}
}
