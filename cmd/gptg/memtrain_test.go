package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Training's memory estimate under ulimit -v, through the binary. Limits are what gptg counts as taken (addressUsed)
// plus a chosen headroom, so the tests hold whatever the Go runtime
// reserves on the machine.

// oneLineRefusal fails t unless r is exit 2 and one line holding each of
// want.
func oneLineRefusal(t *testing.T, what string, r result, want ...string) {
	t.Helper()
	line := strings.TrimSpace(r.stderr)
	ok := r.code == 2 && !strings.Contains(line, "\n")
	for _, w := range want {
		ok = ok && strings.Contains(line, w)
	}
	if !ok {
		t.Fatalf("%s: exit %d, stderr %.800q; want exit 2 and one line with %q", what, r.code, r.stderr, want)
	}
}

// TestTrainingCountsTheCorpus: a training holds its corpus's ids (2 bytes
// a token) and an epoch's order of its windows (8 bytes each), which the
// estimate counts: a 48 MB corpus at context 8 (stride 4) holds 182 MiB
// for a model of 1 MiB, so under 150 MiB of headroom it is refused up
// front, from the file's size, in one line naming the data; with room for
// it, it trains.
func TestTrainingCountsTheCorpus(t *testing.T) {
	dir := t.TempDir()
	text := strings.Repeat("abcdefgh\n", 48<<20/9)
	writeFiles(t, dir, map[string]string{
		"c.txt":  text,
		"c.toml": "[data]\npath = \"c.txt\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nmax_steps = 1\neval_batches = 1\nout = \"r\"\n",
	})
	used := addressUsed(t, dir)
	r := underVM(t, dir, used+150<<10, "train", "c.toml")
	oneLineRefusal(t, "gptg train c.toml (48 MB corpus) under 150 MiB of headroom", r,
		"training this model", ", data 18", "more than this process may still use")
	if exists(filepath.Join(dir, "r")) {
		t.Errorf("the refused training left its run folder")
	}
	if r := underVM(t, dir, used+400<<10, "train", "c.toml"); r.code != 0 {
		t.Errorf("gptg train c.toml under 400 MiB of headroom: exit %d, stderr %.800q; want it to train", r.code, r.stderr)
	}
}

// TestTranslationTrainingChecked: translation training has an estimate of
// its own (not the GPT's formula applied to an encoder–decoder config):
// the estimate of the vocabularies the pairs give (en-es: 201 MiB) is
// checked once they are read, before any graph is built, so a training too
// big for the process is refused in one line, exit 2, no run folder,
// instead of ending in the runtime's "fatal error: out of memory".
func TestTranslationTrainingChecked(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.toml": `[data]
format = "pairs"
path = "builtin:bible-en-es"
tokenizer = "word"
min_count = 2
max_source = 24
max_target = 32
[model]
arch = "encoder-decoder"
embedding = 128
heads = 4
encoder_blocks = 2
decoder_blocks = 2
ff_hidden = 512
norm = "post"
positions = "sinusoidal"
[train]
batch = 32
max_steps = 1
out = "r"
`})
	// Which check refuses is shown against train.max_memory, which the
	// estimates meet exactly: 154 MiB is more than the 120 MiB asked before
	// the vocabularies are known and less than the 201 MiB asked after.
	r := runGptg(t, dir, nil, 0, "train", "t.toml", "--set", "train.max_memory=0.15")
	oneLineRefusal(t, "gptg train of an en-es translation under train.max_memory = 0.15", r,
		"training this model (batch 32 × context 33) needs about 201 MiB", ", data ", "more than the limit of 154 MiB")
	if exists(filepath.Join(dir, "r")) {
		t.Errorf("the refused training left its run folder")
	}
	// Under ulimit -v what the process itself takes by each check varies
	// by up to 70 MiB from run to run (the runtime reserves its heap in
	// arenas as the pairs are read), so either check may be the one that
	// refuses; neither may let the training start (it needs 329 MiB with
	// the runtime's 64 and its Memory's chunk tail, 64).
	used := addressUsed(t, dir)
	r = underVM(t, dir, used+160<<10, "train", "t.toml")
	oneLineRefusal(t, "gptg train of an en-es translation under 160 MiB of headroom", r,
		"training this model (batch 32 × context 33) needs about", "more than this process may still use")
	if exists(filepath.Join(dir, "r")) {
		t.Errorf("the refused training left its run folder")
	}
}

// TestSweepPlanNotCheckedHere: a sweep's runs may train on a cluster
// (sweep emit slurm, k8s), so creating it checks each run against
// train.max_memory only, not against this process's ulimit -v (which
// refused a plan this machine would never run); a run checks its own
// process when it starts.
func TestSweepPlanNotCheckedHere(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"big.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 32\nembedding = 8\nblocks = 1\nheads = 2\n[train]\nbatch = 4096\nmax_steps = 1\n",
		"s.toml":   "configs = [\"big.toml\"]\nout = \"sw\"\n[set]\n\"train.lr\" = [0.001, 0.003]\n",
	})
	used := addressUsed(t, dir)
	limit := used + 150<<10 // the training needs about 340 MiB
	oneLineRefusal(t, "gptg train big.toml under 150 MiB of headroom", underVM(t, dir, limit, "train", "big.toml"),
		"more than this process may still use")
	if r := underVM(t, dir, limit, "sweep", "s.toml"); r.code != 0 {
		t.Fatalf("gptg sweep s.toml under 150 MiB of headroom: exit %d, stderr %.800q; want the plan made", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "sw", "manifest.jsonl")); err != nil {
		t.Errorf("no manifest: %v", err)
	}
	writeFiles(t, dir, map[string]string{"s.toml": "configs = [\"big.toml\"]\nout = \"sw2\"\n[set]\n\"train.max_memory\" = 0.1\n"})
	oneLineRefusal(t, "gptg sweep of a run past its own train.max_memory", underVM(t, dir, limit, "sweep", "s.toml"),
		"more than the limit of 102 MiB")
}
