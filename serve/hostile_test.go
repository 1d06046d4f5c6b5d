package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gptg/gptg/internal/testwait"
	"github.com/gptg/gptg/train"
)

// TestLiveDropsClientsThatDoNotRead: a client that opens a live stream
// and never reads is dropped once its writes stall for writeTimeout, and
// the streams at once are bounded (429 past maxStreams). Kept, each such
// client would hold its unsent events (and the server's memory) for as
// long as it kept the connection: 300 of them on a run of 300,000 rows
// grow the server past 400 MB, and growing.
func TestLiveDropsClientsThatDoNotRead(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	// 100,000 rows: 3 MB of columns to send.
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, `{"step":%d,"loss":2.5,"lr":0.001,"tokens_per_s":1000,"elapsed_s":1}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(runs, "c", train.MetricsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	oldTimeout, oldStreams := writeTimeout, maxStreams
	writeTimeout, maxStreams = 300*time.Millisecond, 1
	defer func() { writeTimeout, maxStreams = oldTimeout, oldStreams }()
	s := newServer(t, Options{Dirs: []string{runs}})
	// Small socket buffers on the server's side, so that the stream's
	// writes stall once the client stops reading (the kernel's would
	// otherwise take all 3 MB of columns).
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()

	// The client that never reads.
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(c, "GET /api/live?id=runs/c HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

	status := func() int {
		resp, err := http.Get(srv.URL + "/api/live?id=runs/c")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for len(s.streams) < cap(s.streams) { // the first stream holds its slot
		runtime.Gosched()
	}
	if got := status(); got != http.StatusTooManyRequests {
		t.Fatalf("a second stream while the first holds the only slot: %d, want 429", got)
	}
	testwait.Until(t, "the client that does not read to lose its stream (write timeout 300 ms)", func() bool { return status() == http.StatusOK })
}

// smallBuffers is a listener whose connections have 4 KiB send buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestAttentionAnswerBounded: an attention answer of more weights than
// maxAttentionWeights is refused with 413 and the longest text that
// fits, before the model runs; a short text still answers.
func TestAttentionAnswerBounded(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	old := maxAttentionWeights
	maxAttentionWeights = 100
	defer func() { maxAttentionWeights = old }()
	s := newServer(t, Options{Dirs: []string{runs}})
	w := get(t, s, "/api/attention?id=runs/c&text="+url.QueryEscape("First Citizen: Before we proceed"))
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "give a text of at most") {
		t.Errorf("a long text: %d %s, want 413 naming the longest text", w.Code, w.Body)
	}
	if w := get(t, s, "/api/attention?id=runs/c&text=First"); w.Code != 200 {
		t.Errorf("a short text: %d %s", w.Code, w.Body)
	}
}

// TestGenerateUnusableModel: a run whose model cannot be run (a damaged
// file) is the named run's problem, not the server's: 422 with the
// reason, not 500.
func TestGenerateUnusableModel(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	mf := filepath.Join(runs, "c", train.ModelFile)
	b, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mf, b[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{Dirs: []string{runs}})
	w := post(s, "/api/generate", `{"id":"runs/c","prompt":"F","tokens":3}`)
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "model.safetensors") {
		t.Errorf("generate on a damaged model: %d %s, want 422 naming the file", w.Code, w.Body)
	}
	if w := get(t, s, "/api/attention?id=runs/c&text=First"); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("attention on a damaged model: %d %s, want 422", w.Code, w.Body)
	}
}

// TestCrossSiteRequestsRefused: the API refuses what a page of another
// site makes a browser send (a POST that runs a model, a GET of attention
// maps or live streams): its Host is right, so the DNS-rebinding check
// lets it through; without the Origin check both would answer 200.
func TestCrossSiteRequestsRefused(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	s := newServer(t, Options{Dirs: []string{runs}})
	body := `{"id":"runs/c","prompt":"a","tokens":2}`
	for _, c := range []struct {
		name, method, target string
		header               [2]string
		want                 int
	}{
		{"POST from another site's page (Origin)", "POST", "/api/generate", [2]string{"Origin", "http://evil.example"}, 403},
		{"POST from a sandboxed page (Origin null)", "POST", "/api/generate", [2]string{"Origin", "null"}, 403},
		{"POST from another port of this host", "POST", "/api/generate", [2]string{"Origin", "http://127.0.0.1:9999"}, 403},
		{"POST from this host and port over https (another origin)", "POST", "/api/generate", [2]string{"Origin", "https://127.0.0.1:8080"}, 403},
		{"POST marked cross-site", "POST", "/api/generate", [2]string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"attention GET marked cross-site", "GET", "/api/attention?id=runs/c&text=a", [2]string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"live GET marked same-site", "GET", "/api/live?id=runs/c", [2]string{"Sec-Fetch-Site", "same-site"}, 403},
		{"POST from this server's own page", "POST", "/api/generate", [2]string{"Origin", "http://127.0.0.1:8080"}, 200},
		{"POST marked same-origin", "POST", "/api/generate", [2]string{"Sec-Fetch-Site", "same-origin"}, 200},
		{"the runs page opened from a link elsewhere", "GET", "/", [2]string{"Sec-Fetch-Site", "cross-site"}, 200},
	} {
		var rd *strings.Reader
		if c.method == "POST" {
			rd = strings.NewReader(body)
		} else {
			rd = strings.NewReader("")
		}
		// A live stream that is (wrongly) answered ends with its request;
		// a POST rightly answered runs the model, in as long as a busy
		// machine takes.
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Hang)
		req := httptestRequest(c.method, c.target, rd).WithContext(ctx)
		req.Header.Set(c.header[0], c.header[1])
		w := serveOne(s, req)
		cancel()
		if w.Code != c.want {
			t.Errorf("%s: %d %.200s, want %d", c.name, w.Code, w.Body.String(), c.want)
		}
		if c.want == 403 && !strings.Contains(w.Body.String(), "refused") {
			t.Errorf("%s: %.200s, want a message saying why", c.name, w.Body.String())
		}
	}
}

func httptestRequest(method, target string, body *strings.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1:8080"
	return req
}

func serveOne(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}
