package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testwait"
)

// TestTranslationMemoryLimit: GPTG_MAX_MEMORY applies to translation
// models as to GPT ones — translate, attention, inspect and eval refuse a
// model whose graphs need more, in one line naming the need, exit 2,
// before reading its tensors (GPTG_MAX_MEMORY=0.001 gptg translate must
// not exit 0).
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
		r := runGptg(t, dir, []string{"GPTG_MAX_MEMORY=0.0000001"}, commandCPU, c.args...)
		want := "runs/toy/model.safetensors: " + c.what
		if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "more than the limit of 107 B") ||
			!strings.Contains(r.stderr, "GPTG_MAX_MEMORY=0.1") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("GPTG_MAX_MEMORY=0.0000001 gptg %s: exit %d, stderr %q; want exit 2 and one line with %q",
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
	long := strings.Repeat("a1 a2 a3 ", 5000)
	writeFiles(t, dir, map[string]string{"in.txt": "a1 a2\n" + long + "\n"})
	r := runGptgWith(t, dir, runOptions{ulimit: "-v 2500000", stdin: "in.txt"}, "translate", translationModelFile)
	code, stdout, stderr := r.code, r.stdout, r.stderr
	want := "gptg translate: stdin:2: cannot translate: translating a sentence of 15000 words with runs/tr/model.safetensors needs about"
	if code != 2 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "more than this process may still use") ||
		!strings.Contains(stderr, "under ulimit -v 2500000 KiB") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("translate of a 15,000-word line under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line %q…", code, stderr, want)
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Errorf("stdout %q: want the first line's translation", stdout)
	}
	r = runGptgWith(t, dir, runOptions{ulimit: "-v 2500000"}, "attention", translationModelFile, "--text", long)
	code, stderr = r.code, r.stderr
	if want := "drawing the attention of a sentence of 15000 words"; code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("attention of a 15,000-word sentence under ulimit -v 2500000: exit %d, stderr %q; want exit 2 and one line with %q", code, stderr, want)
	}
}

// vmSizeKB is a running process's VmSize, in KiB.
func vmSizeKB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmSize")
	return 0
}

// TestServeModelMemoryUnderUlimit: under ulimit -v, serve caps
// --model-memory to what the process may take (less its reserve for
// itself) and says so once at start; a model that does not fit is
// answered 507 naming the limit, and the server stays up, not admitting
// models up to --model-memory into the runtime's out-of-memory trace
// (ulimit -v 2700000, --model-memory 20, a 202 MB model). The limit is set from the server's own VmSize, measured: a
// little less than it and its reserve, so that no model fits.
func TestServeModelMemoryUnderUlimit(t *testing.T) {
	dir := t.TempDir()
	copyRunFolder(t, filepath.Dir(causalModel), filepath.Join(dir, "runs", "c"))
	var v0 int64
	for range 2 {
		cmd, _, _ := startServe(t, dir, "--addr", "127.0.0.1:0")
		v0 = max(v0, vmSizeKB(t, cmd.Process.Pid)) // as it starts, when it checks its headroom
		cmd.Process.Kill()
		cmd.Wait()
	}
	limit := v0 + (256-100)<<10 // KiB: the reserve is 256 MiB; VmSize varies by tens of MiB from run to run
	_, u, stderr := startServeUnder(t, dir, fmt.Sprintf("-v %d", limit), "--addr", "127.0.0.1:0", "--model-memory", "20")
	testwait.For(func() bool { return strings.Contains(stderr.String(), "\n") }) // the note comes through a pipe
	want := "gptg serve: --model-memory 20 GiB is more than this process may use ("
	if s := stderr.String(); !strings.HasPrefix(s, want) || !strings.Contains(s, fmt.Sprintf("under ulimit -v %d KiB", limit)) || strings.Count(s, "\n") != 1 {
		t.Errorf("serve under ulimit -v %d: stderr %q; want one line %q…", limit, s, want)
	}
	post := func() (int, string) {
		req, _ := http.NewRequest("POST", u+"/api/generate", strings.NewReader(`{"id":"runs/c","prompt":"F","tokens":3}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST /api/generate: %v; stderr %q", err, stderr.String())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 2 {
		if code, body := post(); code != http.StatusInsufficientStorage || !strings.Contains(body, fmt.Sprintf("under ulimit -v %d KiB", limit)) {
			t.Errorf("generate on a model that does not fit: %d %.80s; want 507 naming the limit (stderr %q)", code, body, stderr.String())
		}
	}
	if resp, err := http.Get(u + "/api/runs"); err != nil || resp.StatusCode != 200 {
		t.Errorf("after the 507s the server does not answer: %v %v; stderr %q", resp, err, stderr.String())
	} else {
		resp.Body.Close()
	}
}
