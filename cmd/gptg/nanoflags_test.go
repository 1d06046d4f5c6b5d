package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
)

// TestNanoGPTFlagsPoint: each of nanoGPT's flags is refused with gptg's
// name for it (exit 2), and every --set key it names is one gptg has.
func TestNanoGPTFlagsPoint(t *testing.T) {
	dir := t.TempDir()
	for name, ours := range nanoGPTNames {
		cmd := "train"
		if strings.HasPrefix(ours, "gptg sample") {
			cmd = "sample"
		}
		r := gptg(t, dir, cmd, "x", "--"+name+"=7")
		if r.code != 2 || !strings.Contains(r.stderr, "--"+name+" is nanoGPT's name: write ") {
			t.Errorf("gptg %s x --%s=7: exit %d, %q", cmd, name, r.code, r.stderr)
		}
		for _, m := range regexp.MustCompile(`--set (\w+\.\w+)=`).FindAllStringSubmatch(ours, -1) {
			_, err := config.Load("../../configs/shakespeare.toml", []string{m[1] + "=1"})
			if err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("--%s points to %s, which gptg does not have: %v", name, m[1], err)
			}
		}
	}
	// gptg's own flags of the same name stay gptg's.
	if r := gptg(t, dir, "sample", "x", "--temperature=0.5"); strings.Contains(r.stderr, "nanoGPT") {
		t.Errorf("--temperature is sample's own flag: %q", r.stderr)
	}
}

// TestPastedCommandLines: a nanoGPT command line pasted whole gets every
// foreign flag pointed to gptg's name in one error, and the flags gptg
// already follows (--device=cpu, --compile=False) pass with a note.
func TestPastedCommandLines(t *testing.T) {
	dir := t.TempDir()
	r := gptg(t, dir, "train", "x.toml", "--device=cpu", "--compile=False", "--max_iters=5", "--n_layer", "2")
	if r.code != 2 || !strings.Contains(r.stderr, "2 flags are nanoGPT's names: --max_iters=5 → --set train.max_steps=5; --n_layer=2 → --set model.blocks=2") {
		t.Errorf("two foreign flags: exit %d, %q", r.code, r.stderr)
	}
	r = gptg(t, dir, "train", "x.toml", "--device=cpu", "--compile=False")
	if strings.Count(r.stderr, "note: ") != 2 || strings.Contains(r.stderr, "nanoGPT's name") || !strings.Contains(r.stderr, "x.toml: no such file") {
		t.Errorf("--device=cpu --compile=False: exit %d, %q; want two notes, then the missing config", r.code, r.stderr)
	}
	if r := gptg(t, dir, "train", "x.toml", "--device=cuda"); r.code != 2 || !strings.Contains(r.stderr, "--device is nanoGPT's name: write --threads N: gptg runs on the CPU") {
		t.Errorf("--device=cuda: exit %d, %q, want refused", r.code, r.stderr)
	}
	if r := gptg(t, dir, "train", "x.toml", "--max-steps", "3"); r.code != 2 || !strings.Contains(r.stderr, "--set train.max_steps=V") {
		t.Errorf("--max-steps: exit %d, %q, want a pointer to --set train.max_steps", r.code, r.stderr)
	}
}

// TestTrainCommandLineMistakes: what a new user types the second time —
// the first command again, the run folder for the config, a mistyped
// config name — is exit 2 with the command that works, before anything
// claims to start training.
func TestTrainCommandLineMistakes(t *testing.T) {
	dir := t.TempDir()
	tinyConfig(t, filepath.Join(dir, "small.toml"), "[train]\nmax_steps = 2\nbatch = 2\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\n")
	ok(t, dir, "train", "small.toml")
	r := gptg(t, dir, "train", "small.toml")
	if r.code != 2 || strings.Contains(r.stdout, "training") || !strings.Contains(r.stderr, "gptg train --resume runs/small --set train.max_steps=4") {
		t.Errorf("the same command again: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := gptg(t, dir, "train", "runs/small"); r.code != 2 || !strings.Contains(r.stderr, "is a run folder: continue or extend it with `gptg train --resume runs/small`") {
		t.Errorf("gptg train RUN_FOLDER: exit %d, %q", r.code, r.stderr)
	}
	if r := gptg(t, dir, "train", "smal.toml"); r.code != 2 || !strings.Contains(r.stderr, "did you mean small.toml?") {
		t.Errorf("a mistyped config: exit %d, %q", r.code, r.stderr)
	}
}
