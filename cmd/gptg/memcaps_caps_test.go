package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// addressUsed is the address space (KiB) gptg counts as taken when it
// checks a memory estimate (its VmSize, with the threads still to come):
// the ulimit -v under which a command refuses a 3 GiB training, less the
// headroom its refusal reports. Limits set from it leave a chosen
// headroom, whatever the Go runtime reserves on this machine.
func addressUsed(t *testing.T, dir string) int64 {
	t.Helper()
	writeFiles(t, dir, map[string]string{"huge.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 512\nembedding = 256\nblocks = 4\nheads = 8\n[train]\nbatch = 32\n"})
	limit := peakVM(t, dir, "version") + 512<<10
	r := underVM(t, dir, limit, "graph", "huge.toml")
	m := regexp.MustCompile(`more than this process may still use \(([0-9]+) MiB, under ulimit -v`).FindStringSubmatch(r.stderr)
	if r.code != 2 || m == nil {
		t.Fatalf("gptg graph huge.toml under ulimit -v %d: exit %d, stderr %q; want the headroom it refuses", limit, r.code, r.stderr)
	}
	mib, _ := strconv.ParseInt(m[1], 10, 64)
	return limit - mib<<10
}

// pairsFile is n lines of one-word pairs over 997 distinct sentences
// (some of them test pairs).
func pairsFile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d\tb%d\n", i%997, i%997)
	}
	return b.String()
}

// refusalSuggests checks that r is a refusal in one line (exit 2)
// starting with prefix and holding want, and returns the number its advice
// gives after marker ("head -n ", "at most "). what names the run.
func refusalSuggests(t *testing.T, what string, r result, prefix, want, marker string) int {
	t.Helper()
	if r.code != 2 || !strings.HasPrefix(r.stderr, prefix) || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("%s: exit %d, stderr %.600q; want exit 2 and one line %q…%q", what, r.code, r.stderr, prefix, want)
	}
	_, advice, _ := strings.Cut(r.stderr, marker)
	n, err := strconv.Atoi(advice[:len(advice)-len(strings.TrimLeft(advice, "0123456789"))])
	if err != nil {
		t.Fatalf("%s: stderr %q names no number after %q", what, r.stderr, marker)
	}
	return n
}

// TestPairsBoundFitsTheProcess: the kept pairs of a pairs file are held
// up to a fixed 512 MiB (about twice that at the peak), which a process
// under ulimit -v may not have (268 MB in use would end in the runtime's
// "fatal error: out of memory"). The bound is the smaller of the two, and
// the refusal names the limit and the lines that fit; those lines then
// read under the same limit.
func TestPairsBoundFitsTheProcess(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"p.tsv":  pairsFile(900_000), // about 235 MiB held
		"p.toml": pairsConfig,
	})
	// Room for 157 MiB of pairs (what is left after a heap arena, over
	// 1.5), give or take a thread's reservation (72 MiB) the run may start
	// or not: never the 235 MiB of the file.
	limit := addressUsed(t, dir) + 300<<10
	r := underVM(t, dir, limit, "data", "pairs", "p.toml")
	want := fmt.Sprintf("this process may still hold under ulimit -v %d KiB (gptg holds every kept pair while it reads): train on a part of the file (head -n ", limit)
	lines := refusalSuggests(t, fmt.Sprintf("gptg data pairs p.toml under ulimit -v %d (300 MiB of headroom)", limit), r, "gptg data: p.tsv:", want, "head -n ")
	if lines < 10_000 || lines >= 900_000 {
		t.Fatalf("the refusal suggests head -n %d: want a part of the file", lines)
	}
	writeFiles(t, dir, map[string]string{"p.tsv": pairsFile(lines)})
	if r := underVM(t, dir, limit, "data", "pairs", "p.toml"); r.code != 0 {
		t.Errorf("gptg data pairs of the %d lines the refusal suggested, under the same limit: exit %d, stderr %.600q", lines, r.code, r.stderr)
	}
}

// TestCorpusFitsTheProcess: a text corpus's token ids are held whole (two
// bytes a token), up to the 1 GiB a corpus may be: 2 GiB, which a process
// under ulimit -v may not have (a 211 MB corpus under ulimit -v 1900000
// ended in "fatal error: out of memory" with 12 MB in use). Now refused
// in one line naming the need and the limit; with room for them it loads.
func TestCorpusFitsTheProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := "[data]\npath = \"c.txt\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n"
	writeFiles(t, dir, map[string]string{
		"c.txt":  strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2_800_000), // 123 MB: 235 MiB of ids
		"c.toml": cfg,
	})
	// The training estimate counts the ids (and the 211 MiB of an epoch's
	// window order) from the file's size, before the loader's own check:
	// refused up front, exit 2, naming the data.
	used := addressUsed(t, dir)
	limit := used + 150<<10
	r := underVM(t, dir, limit, "graph", "c.toml")
	want := "data 446 MiB) plus 64 MiB for the Go runtime and 256 KiB of address space its graphs reserve unwritten, more than this process may still use ("
	if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, fmt.Sprintf("under ulimit -v %d KiB)", limit)) ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("gptg graph c.toml under ulimit -v %d (150 MiB of headroom): exit %d, stderr %.600q; want exit 2 and one line with %q",
			limit, r.code, r.stderr, want)
	}
	if r := underVM(t, dir, used+640<<10, "graph", "c.toml"); r.code != 0 {
		t.Errorf("gptg graph c.toml with 640 MiB of headroom: exit %d, stderr %.600q", r.code, r.stderr)
	}
}

// TestChunkTailsCountUnderUlimit: the graphs' memory reserves chunks of up
// to 64 MiB that a run may never write to the end; under ulimit -v that
// reserve is what is limited (a training accepted without it ran out of
// address space 2 runs of 3). Under a real ulimit -v the refusal names
// the tails. Where the line between refused and accepted falls is
// config's TestChunkTailsCountUnderAddressSpace: a process's own address
// space at its check varies from run to run by up to a heap arena
// (64 MiB), as much as half the tails, so a test of that line through a
// real limit failed about 1 run in 12.
func TestChunkTailsCountUnderUlimit(t *testing.T) {
	dir := t.TempDir()
	// The vocabulary given: the estimate is whole before the corpus loads.
	writeFiles(t, dir, map[string]string{"c.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\nvocab = 65\ncontext = 128\nembedding = 256\nblocks = 4\nheads = 4\n[train]\nbatch = 16\n"})
	used := addressUsed(t, dir)
	r := underVM(t, dir, used+100<<10, "graph", "c.toml")
	m := regexp.MustCompile(`needs about ([0-9]+) MiB .* plus 64 MiB for the Go runtime and ([0-9]+) MiB of address space its graphs reserve unwritten, more than`).FindStringSubmatch(r.stderr)
	if r.code != 2 || m == nil {
		t.Fatalf("gptg graph c.toml with 100 MiB of headroom: exit %d, stderr %.600q; want the estimate and the chunks' tails", r.code, r.stderr)
	}
	if tails, _ := strconv.ParseInt(m[2], 10, 64); tails != 128 { // two shards, a 64 MiB chunk's tail each
		t.Errorf("tails %d MiB, want 128", tails)
	}
}

// TestPictureFitsTheProcess: an attention .png may hold 65,536 cells,
// which take about 500 MB to draw (4 heads over 128 tokens); under a
// tighter ulimit -v that ended in the runtime's out-of-memory trace. Now
// the bound is lowered to what the process may still take, and the
// refusal names the tokens that fit, which then draw under the same limit.
func TestPictureFitsTheProcess(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"att.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 128\nembedding = 16\nblocks = 1\nheads = 4\n[train]\nbatch = 2\nmax_steps = 1\neval_batches = 1\nout = \"att\"\n"})
	if r := gptg(t, dir, "train", "att.toml"); r.code != 0 {
		t.Fatalf("gptg train att.toml: exit %d: %s", r.code, r.stderr)
	}
	text := strings.Repeat("To be, or not to be: that is the question. ", 3)[:128]
	limit := addressUsed(t, dir) + 300<<10
	r := underVM(t, dir, limit, "attention", "att", "--text", text, "--out", "a.png")
	want := fmt.Sprintf("gptg attention: a png of 4 heatmaps holding 65536 cells takes about 512 MiB to draw, more than this process may still use (under ulimit -v %d KiB: ", limit)
	fit := refusalSuggests(t, fmt.Sprintf("gptg attention (128 tokens, .png) under ulimit -v %d (300 MiB of headroom)", limit), r, want, "", "at most ")
	if fit < 8 || fit >= 128 {
		t.Fatalf("the refusal says %d tokens fit: want fewer than 128", fit)
	}
	if r := underVM(t, dir, limit, "attention", "att", "--text", text[:fit], "--out", "a.png", "--force"); r.code != 0 {
		t.Errorf("gptg attention of the %d tokens the refusal named, under the same limit: exit %d, stderr %.600q", fit, r.code, r.stderr)
	}
}

// memcapsInputs are TestBadInputs' rows for fixed bounds lowered to what
// the process may still take (each under a ulimit -v leaving it
// headroomMB).
func memcapsInputs() []badInput {
	attModel := func(t *testing.T, dir string) {
		writeFiles(t, dir, map[string]string{"att.toml": "[data]\npath = \"builtin:tinyshakespeare\"\n[model]\ncontext = 128\nembedding = 16\nblocks = 1\nheads = 4\n[train]\nbatch = 2\nmax_steps = 1\neval_batches = 1\nout = \"att\"\n"})
		if r := gptg(t, dir, "train", "att.toml", "--quiet"); r.code != 0 {
			t.Fatalf("gptg train att.toml: exit %d: %s", r.code, r.stderr)
		}
	}
	// Large files are written by setup, not held in the rows: every run of
	// the binary would count them in its peak memory (vfork).
	pairs := func(t *testing.T, dir string) {
		writeFiles(t, dir, map[string]string{"p.tsv": pairsFile(900_000), "p.toml": pairsConfig})
	}
	corpus := func(t *testing.T, dir string) {
		writeFiles(t, dir, map[string]string{"c.txt": strings.Repeat("the quick brown fox jumps over the lazy dog\n", 2_800_000),
			"c.toml": "[data]\npath = \"c.txt\"\n[model]\ncontext = 8\nembedding = 8\nblocks = 1\nheads = 2\n"})
	}
	return []badInput{
		{name: "pairs: more kept pairs than the process may still hold", headroomMB: 300, setup: pairs,
			args: []string{"data", "pairs", "p.toml"}, code: 2, msg: "this process may still hold under ulimit -v"},
		{name: "corpus: token ids larger than the process may still take", headroomMB: 150, setup: corpus,
			args: []string{"graph", "c.toml"}, code: 2, msg: "data 446 MiB) plus 64 MiB for the Go runtime and 256 KiB of address space its graphs reserve unwritten, more than this process may still use"},
		{name: "attention: a picture larger than the process may still draw", headroomMB: 300, setup: attModel,
			args: []string{"attention", "att", "--text", strings.Repeat("To be, or not to be: that is the question. ", 3)[:128], "--out", "a.png"},
			code: 2, msg: "a png of 4 heatmaps holding 65536 cells takes about 512 MiB to draw, more than this process may still use (under ulimit -v"},
	}
}
