package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTranslationMemoryLimit: GPTG_MAX_MEMORY applies to translation
// models as to GPT ones — translate, attention, inspect and eval refuse a
// model whose graphs need more, in one line naming the need, exit 2,
// before reading its tensors. They had no check at all (session 10:
// GPTG_MAX_MEMORY=0.0001 gptg translate exited 0).
func TestTranslationMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	for name, text := range toyTranslation() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, dir, "train", "toy.toml", "--quiet")
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"translate", "runs/toy", "--text", "a1 a2"}, "translating with this model needs about"},
		{[]string{"translate", "runs/toy", "--beam", "4", "--no-cache", "--text", "a1 a2"}, "translating with this model needs about"},
		{[]string{"attention", "runs/toy", "--text", "a1 a2"}, "drawing the attention of this model needs about"},
		{[]string{"inspect", "runs/toy"}, "inspecting this model needs about"},
		{[]string{"eval", "runs/toy"}, "evaluating this model needs about"},
	} {
		r := runGptg(t, dir, []string{"GPTG_MAX_MEMORY=0.001"}, commandCPU, c.args...)
		want := "runs/toy/model.safetensors: " + c.what
		if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "more than the limit of 1 MiB") ||
			!strings.Contains(r.stderr, "GPTG_MAX_MEMORY=0.1") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("GPTG_MAX_MEMORY=0.001 gptg %s: exit %d, stderr %q; want exit 2 and one line with %q",
				strings.Join(c.args, " "), r.code, r.stderr, want)
		}
		// The default limit lets the same model run.
		if r := gptg(t, dir, c.args...); r.code != 0 {
			t.Errorf("gptg %s: exit %d, stderr %q", strings.Join(c.args, " "), r.code, r.stderr)
		}
	}
}

// TestTranslationLongSentenceUnderUlimit: a model of sinusoidal positions
// reads a sentence of any length, and its encoder's attention maps grow as
// the square of it: under ulimit -v, 15,000 words (2 GB of attention
// weights) are refused in one line naming the need and the limit (exit 2)
// before any graph is built; they ended in the runtime's "fatal error: out
// of memory" trace. Sentences of the usual length still translate under
// the same limit.
func TestTranslationLongSentenceUnderUlimit(t *testing.T) {
	dir := t.TempDir()
	writeTranslationModelPositions(t, dir, "sinusoidal")
	run := func(stdin string, args ...string) (int, string, string) {
		cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 2500000 && exec "$0" "$@"`, gptgBin}, args...)...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		cmd.Run()
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("gptg %s took %s", strings.Join(args, " "), d)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	long := strings.Repeat("a1 a2 a3 ", 5000)
	code, stdout, stderr := run("a1 a2\n"+long+"\n", "translate", translationModelFile)
	want := "gptg translate: stdin:2: cannot translate: translating a sentence of 15000 words with runs/tr/model.safetensors needs about"
	if code != 2 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "more than this process may still use") ||
		!strings.Contains(stderr, "under ulimit -v 2500000 KiB") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("translate of a 15,000-word line under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line %q…", code, stderr, want)
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Errorf("stdout %q: want the first line's translation", stdout)
	}
	code, _, stderr = run("", "attention", translationModelFile, "--text", long)
	if want := "drawing the attention of a sentence of 15000 words"; code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("attention of a 15,000-word sentence under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line with %q", code, stderr, want)
	}
}
