package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The rows and tests of this file are the non-blocking findings left from
// round six's audit of hostile input (issue #24,
// testdata/hostile/probes_audit.py) and from its review.

func leftoverInputs(t *testing.T) []badInput {
	const cfg = "[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 1\n[train]\nmax_steps = 2\n"
	link := func(target, name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []badInput{
		{name: "ablate /dev/stdin redirected from a config (each run read its own stdin and failed, exit 1, ab/ left)",
			files: map[string]string{"c.toml": cfg}, stdin: "c.toml",
			args: []string{"ablate", "/dev/stdin", "--out", "ab"}, code: 2, msg: "config /dev/stdin: is in /dev; each run reads its config again"},
		{name: "ablate of a config that is a link to /dev/stdin", files: map[string]string{"c.toml": cfg}, stdin: "c.toml", setup: link("/dev/stdin", "x.toml"),
			args: []string{"ablate", "x.toml", "--out", "ab"}, code: 2, msg: "config x.toml: leads to /dev/stdin; each run reads its config again"},
	}
}
