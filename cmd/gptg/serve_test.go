package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testwait"
	"github.com/gptg/gptg/serve"
)

// startServe starts `gptg serve args...` and returns it with the URL it
// printed. The process is killed at the end of the test if still running.
func startServe(t *testing.T, dir string, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	return startServeUnder(t, dir, "", args...)
}

// startServeUnder is startServe under the shell's ulimit (runOptions.ulimit).
func startServeUnder(t *testing.T, dir, ulimit string, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := gptgCommand(context.Background(), dir, ulimit, append([]string{"serve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("gptg serve printed no address: %v; stderr: %s", err, stderr.String())
	}
	_, u, ok := strings.Cut(strings.TrimSpace(line), " on ")
	u, _, _ = strings.Cut(u, " ")
	if !ok || !strings.HasPrefix(u, "http://") {
		t.Fatalf("gptg serve's first line %q names no URL", line)
	}
	go io.Copy(io.Discard, stdout)
	return cmd, u, &stderr
}

// TestServeShutdown: SIGINT and SIGTERM stop the server, exit 0, even
// with a live stream open, which never ends by itself: the server bounds
// its own shutdown (900 ms), and the test waits up to testwait.Hang, so
// that a busy machine, which stretches that second, does not fail it.
func TestServeShutdown(t *testing.T) {
	dir := t.TempDir()
	copyRunFolder(t, filepath.Dir(causalModel), filepath.Join(dir, "runs", "c"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, u, stderr := startServe(t, dir, "--addr", "127.0.0.1:0")
		resp, err := http.Get(u + "/api/live?id=runs/c")
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 64)
		if _, err := resp.Body.Read(first); err != nil || !strings.HasPrefix(string(first), "event: rows") {
			t.Fatalf("live stream: %q %v", first, err)
		}
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: exit %v, want 0; stderr %s", sig, err, stderr)
			}
		case <-time.After(testwait.Hang):
			t.Fatalf("%v: still running after %v", sig, testwait.Hang)
		}
		resp.Body.Close()
	}
}

func copyRunFolder(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"config.toml", "model.safetensors", "metrics.jsonl", "checkpoint.safetensors"} {
		copyFile(t, filepath.Join(src, n), filepath.Join(dst, n))
	}
}

// TestServeUsage: bad flags and folders are one line and exit 2; a
// non-loopback --addr warns.
func TestServeUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "no runs/ folder here"},
		{[]string{"serve", "missing"}, "missing"},
		{[]string{"serve", ".", "--generations", "0"}, "--generations"},
		{[]string{"serve", ".", "--model-memory", "-1"}, "--model-memory"},
		{[]string{"serve", ".", "--time-limit", "0s"}, "--time-limit"},
		{[]string{"serve", ".", "--bogus"}, "bogus"},
	} {
		r := gptg(t, dir, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("gptg %s: exit %d, stderr %q; want 2 and one line naming %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if r := gptg(t, dir, "serve", "--addr", busy.Addr().String(), "."); r.code != 1 || !strings.Contains(r.stderr, "--addr") {
		t.Errorf("an address that cannot be listened on: exit %d %q", r.code, r.stderr)
	}
	cmd, u, stderr := startServe(t, dir, ".", "--addr", "0.0.0.0:0")
	// The warning comes just after the address line startServe waited for.
	if !testwait.For(func() bool { return strings.Contains(stderr.String(), "warning: listening on") }) {
		t.Errorf("--addr 0.0.0.0:0: no warning, stderr %q", stderr.String())
	}
	if resp, err := http.Get(u + "/api/runs"); err != nil || resp.StatusCode != 200 {
		t.Errorf("beyond loopback, any Host is accepted: %v %v", resp, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
}

// TestServeAttentionMatchesCLI: the explorer's numbers are the ones gptg
// attention prints (three decimals), for the causal and the unmasked model.
func TestServeAttentionMatchesCLI(t *testing.T) {
	dir := t.TempDir()
	copyRunFolder(t, filepath.Dir(causalModel), filepath.Join(dir, "runs", "c"))
	copyRunFolder(t, filepath.Dir(unmaskedModel), filepath.Join(dir, "runs", "u"))
	srv, err := serve.New(serve.Options{Dirs: []string{filepath.Join(dir, "runs")}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, id := range []string{"c", "u"} {
		text := "First Ci"
		printed := ok(t, dir, "attention", filepath.Join("runs", id), "--text", text)
		cli := parseAttentionText(t, printed)
		req := httptest.NewRequest("GET", "/api/attention?id=runs/"+id+"&text="+url.QueryEscape(text), nil)
		req.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		var got struct{ Maps [][][]float64 }
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
			t.Fatalf("%s: %d %s", id, w.Code, w.Body)
		}
		if len(cli) == 0 || len(cli) != len(got.Maps)*len(got.Maps[0]) {
			t.Fatalf("%s: gptg attention printed %d tables, the server gave %d×%d maps", id, len(cli), len(got.Maps), len(got.Maps[0]))
		}
		for k, table := range cli {
			m := got.Maps[k/len(got.Maps[0])][k%len(got.Maps[0])]
			if len(table) != len(m) {
				t.Fatalf("%s table %d: %d numbers printed, %d served", id, k, len(table), len(m))
			}
			for i, v := range table {
				if math.Abs(m[i]-v) > 0.0005+1e-9 { // printed with 3 decimals
					t.Fatalf("%s table %d [%d]: printed %.3f, served %v", id, k, i, v, m[i])
				}
			}
		}
	}
}

// parseAttentionText reads gptg attention's tables: per "block b, head h"
// the row-major weights.
func parseAttentionText(t *testing.T, s string) [][]float64 {
	t.Helper()
	var tables [][]float64
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "block ") {
			continue
		}
		var table []float64
		// Rows are a quoted label, then the numbers; the header is skipped.
		for j := i + 2; j < len(lines) && strings.TrimSpace(lines[j]) != ""; j++ {
			f := strings.Fields(lines[j])
			k := len(f)
			for k > 0 {
				if _, err := strconv.ParseFloat(f[k-1], 64); err != nil {
					break
				}
				k--
			}
			for _, x := range f[k:] {
				v, _ := strconv.ParseFloat(x, 64)
				table = append(table, v)
			}
		}
		tables = append(tables, table)
	}
	if len(tables) == 0 {
		t.Fatalf("no table in %q", s)
	}
	return tables
}

// serveInputs are gptg serve's rows of docs/errors.md (TestBadInputs).
func serveInputs() []badInput {
	return []badInput{
		{name: "serve a missing folder", args: []string{"serve", "nope"}, code: 2, msg: "nope: no such file or directory"},
		{name: "serve a file", files: map[string]string{"f.txt": "x"}, args: []string{"serve", "f.txt"}, code: 2, msg: "f.txt is not a folder"},
		{name: "serve --generations 0", args: []string{"serve", ".", "--generations", "0"}, code: 2, msg: "--generations 0 must be between 1 and 64"},
		// int64(1e-12 GiB) is 0 bytes, which the server would take as
		// "the default": 2 GiB.
		{name: "serve --model-memory 1e-12", args: []string{"serve", ".", "--model-memory", "1e-12"}, code: 2, msg: "--model-memory 1e-12 GiB is less than 1 MiB: no model fits"},
		// Every other command bounds --threads: serve would start that
		// many goroutines per model run.
		{name: "serve --threads 100000", args: []string{"serve", ".", "--threads", "100000"}, code: 2, msg: "must be 0 (every core) or a number of threads up to 4096"},
		// It would pass as HOST:PORT, and net.Listen's error echo all
		// 100 KB.
		{name: "serve --addr of a 100 KB host", args: []string{"serve", ".", "--addr", strings.Repeat("1", 100_000) + ":80"}, code: 2, msg: "the host is longer than 253 bytes"},
	}
}
