package corpus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testwait"
)

const body = "First Citizen:\nBefore we proceed any further, hear me speak.\n"

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// serve answers /data.txt with body and anything else with 404.
func serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/data.txt" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// entries lists the names in dir (nil when dir does not exist).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, _ := os.ReadDir(dir)
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

func wantError(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", fragments)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func TestEnsureDownloads(t *testing.T) {
	srv := serve(t)
	dir := filepath.Join(t.TempDir(), "data", "nested") // created by Ensure
	path := filepath.Join(dir, "input.txt")
	if err := Ensure(path, srv.URL+"/data.txt", strings.ToUpper(sumOf(body)), srv.Client()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != body {
		t.Fatalf("file = %q, %v", got, err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %q, want only input.txt", names)
	}
	// A second call finds the file and verifies it without the network.
	if err := Ensure(path, "http://127.0.0.1:1/unused", sumOf(body), nil); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureDownloadsWithoutChecksum(t *testing.T) {
	srv := serve(t)
	path := filepath.Join(t.TempDir(), "input.txt")
	if err := Ensure(path, srv.URL+"/data.txt", "", srv.Client()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != body {
		t.Fatalf("file = %q", got)
	}
}

func TestEnsureNotFound(t *testing.T) {
	srv := serve(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "input.txt")
	url := srv.URL + "/missing.txt"
	wantError(t, Ensure(path, url, "", srv.Client()), url, "404", "put the file at "+path)
	if names := entries(t, dir); len(names) != 0 {
		t.Fatalf("left behind: %q", names)
	}
}

func TestEnsureChecksumMismatch(t *testing.T) {
	srv := serve(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "input.txt")
	url := srv.URL + "/data.txt"
	wrong := sumOf("something else")
	wantError(t, Ensure(path, url, wrong, srv.Client()), url, wrong, sumOf(body), "put the file at "+path)
	if names := entries(t, dir); len(names) != 0 {
		t.Fatalf("left behind: %q", names)
	}
}

func TestEnsureUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/data.txt"
	srv.Close() // nothing listens at url any more
	dir := t.TempDir()
	path := filepath.Join(dir, "input.txt")
	wantError(t, Ensure(path, url, "", nil), "downloading "+url+" failed", "put the file at "+path)
	if names := entries(t, dir); len(names) != 0 {
		t.Fatalf("left behind: %q", names)
	}
}

func TestEnsureExistingFile(t *testing.T) {
	path := writeText(t, body)
	if err := Ensure(path, "", "", nil); err != nil {
		t.Fatalf("no checksum: %v", err)
	}
	if err := Ensure(path, "", sumOf(body), nil); err != nil {
		t.Fatalf("right checksum: %v", err)
	}
	wrong := sumOf("x")
	wantError(t, Ensure(path, "", wrong, nil), path, wrong, sumOf(body))
}

func TestEnsureMissingWithoutURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "input.txt")
	err := Ensure(path, "", "", nil)
	want := "data file " + path + " does not exist and [data] url is not set"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestEnsureBadChecksumSetting(t *testing.T) {
	wantError(t, Ensure(writeText(t, body), "", "abc", nil), `[data] sha256 "abc" is not 64 hex digits`)
}

// TestEnsureStopsWhenCancelled: Ctrl-C during a download that stalls (a
// slow mirror, a dropped network) stops it at once, not after the
// download's five-minute bound, with ctx's error and nothing written.
func TestEnsureStopsWhenCancelled(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write([]byte("First Citizen:\n"))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done() // and never the rest
	}))
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "input.txt")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	// A download that did not stop would wait for the server's rest until
	// the client's hour: the wait is bounded by testwait.Hang.
	var err error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		err = EnsureContext(ctx, path, srv.URL+"/data.txt", "", &http.Client{Timeout: time.Hour})
	}()
	select {
	case <-finished:
	case <-time.After(testwait.Hang):
		t.Fatalf("the cancelled download still running after %v", testwait.Hang)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a file was written")
	}

	// A large existing file checked against its sha256 stops too.
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, make([]byte, 4*chunkSize), 0o644); err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := EnsureContext(done, big, "", strings.Repeat("0", 64), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("checking a file with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestEnsureHostileServers: a server that stalls, never ends, announces
// too much, sends no text or nothing at all gets one line each, soon, and
// leaves nothing behind (the whole file is streamed to a temporary one, so
// memory stays at a chunk). The idle bound is lowered to a second: short
// for the stalls, long beside the pauses a busy machine gives a stream
// that does flow.
func TestEnsureHostileServers(t *testing.T) {
	defer func(idle time.Duration, max int64) { idleTimeout, maxDownload = idle, max }(idleTimeout, maxDownload)
	idleTimeout, maxDownload = time.Second, 4*chunkSize
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stall":
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte("First"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/stall-headers":
			<-r.Context().Done()
		case "/endless":
			chunk := []byte(strings.Repeat("abcdefg\n", 1<<12))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/announced":
			w.Header().Set("Content-Length", "1099511627776")
			w.WriteHeader(http.StatusOK)
		case "/binary":
			w.Write([]byte("text, then \xff\xfe"))
		case "/empty":
		}
	}))
	defer srv.Close()
	for _, c := range []struct{ path, want string }{
		{"/stall", "after 5 bytes: the server sent nothing for 1s"},
		{"/stall-headers", "the server sent nothing for 1s"},
		{"/endless", "the file is larger than a corpus can be (4194304 bytes)"},
		{"/announced", "the file is 1099511627776 bytes, larger than a corpus can be (4194304 bytes)"},
		{"/binary", "the server sent no text: text is not valid UTF-8 (bad byte 0xff at offset 11)"},
		{"/empty", "the server sent an empty file"},
	} {
		t.Run(c.path, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "input.txt")
			var err error
			finished := make(chan struct{})
			go func() { defer close(finished); err = Ensure(path, srv.URL+c.path, "", nil) }()
			select {
			case <-finished:
			case <-time.After(testwait.Hang):
				t.Fatalf("still downloading after %v", testwait.Hang)
			}
			wantError(t, err, "downloading "+srv.URL+c.path+" failed: "+c.want+"; put the file at "+path)
			if names := entries(t, dir); len(names) != 0 {
				t.Errorf("left behind: %q", names)
			}
		})
	}
}
