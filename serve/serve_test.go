package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/testwait"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
)

// The fixtures are trained once: a causal and an unmasked tiny model.
var (
	fixtureOnce                 sync.Once
	fixtureDir                  string
	causalRun, unmaskedRun      string // run folders
	interruptedRun              string // stopped by a signal at step 10 of 20
	fixtureErr                  error
	causalModelFile, unmaskedMF string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

func fixtures(t *testing.T) {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "gptg-serve-test-")
		if fixtureErr != nil {
			return
		}
		causalRun, unmaskedRun = filepath.Join(fixtureDir, "causal"), filepath.Join(fixtureDir, "unmasked")
		if causalModelFile, fixtureErr = testmodel.Train(testmodel.Config(causalRun, true, 20)); fixtureErr != nil {
			return
		}
		if unmaskedMF, fixtureErr = testmodel.Train(testmodel.Config(unmaskedRun, false, 20)); fixtureErr != nil {
			return
		}
		interruptedRun = filepath.Join(fixtureDir, "interrupted")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := testmodel.Config(interruptedRun, true, 20)
		c.Train.LogEvery = 5
		_, err := train.Run(ctx, c, train.Options{AfterStep: func(step int) {
			if step == 10 {
				cancel()
			}
		}})
		if !errors.Is(err, train.ErrInterrupted) {
			fixtureErr = fmt.Errorf("the interrupted fixture: %v, want ErrInterrupted", err)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
}

// copyRun copies a fixture run folder to dst (its files only).
func copyRun(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range runFiles {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// age moves the server's scan clock back by d, as if d had passed since
// its last scan of the folders and its last runs table: what the scan
// interval does is tested without sleeping through it.
func age(s *Server, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scanned = s.scanned.Add(-d)
	s.runsAt = s.runsAt.Add(-d)
}

// get answers a GET through the handler, with a loopback Host.
func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.Host = "127.0.0.1:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %.300s", w.Code, err, w.Body.String())
	}
	return v
}

func runByID(t *testing.T, list runsList, id string) runInfo {
	t.Helper()
	for _, r := range list.Runs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no run %q in %+v", id, list.Runs)
	return runInfo{}
}

// TestRunsTable: states (finished, interrupted, failed, damaged, model
// only), half-written metrics, the differs column, and runs that appear and
// disappear while the server runs.
func TestRunsTable(t *testing.T) {
	fixtures(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	copyRun(t, causalRun, filepath.Join(runs, "causal"))
	copyRun(t, unmaskedRun, filepath.Join(runs, "unmasked"))
	// Damaged: a config.toml that is not one, and a checkpoint cut short.
	copyRun(t, causalRun, filepath.Join(runs, "badconfig"))
	os.WriteFile(filepath.Join(runs, "badconfig", train.ConfigFile), []byte("[model\nheads = "), 0o644)
	copyRun(t, causalRun, filepath.Join(runs, "badckpt"))
	os.WriteFile(filepath.Join(runs, "badckpt", train.CheckpointFile), []byte("12345"), 0o644)
	// Half-written: a metrics row cut mid-write, a garbage line.
	copyRun(t, causalRun, filepath.Join(runs, "half"))
	m, _ := os.ReadFile(filepath.Join(runs, "half", train.MetricsFile))
	os.WriteFile(filepath.Join(runs, "half", train.MetricsFile), append(append([]byte("not json\n"), m...), `{"step":999,"lo`...), 0o644)
	// Interrupted: stopped by a signal at step 10 of 20, saved. Failed:
	// the same with metrics past the checkpoint's step (a crash after
	// them), no process holding the folder.
	copyRun(t, interruptedRun, filepath.Join(runs, "interrupted"))
	copyRun(t, interruptedRun, filepath.Join(runs, "failed"))
	f, _ := os.OpenFile(filepath.Join(runs, "failed", train.MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":15,"loss":2.5}` + "\n")
	f.Close()
	// A model file alone (an import), and a folder with nothing of a run.
	os.MkdirAll(filepath.Join(runs, "imported"), 0o755)
	b, _ := os.ReadFile(causalModelFile)
	os.WriteFile(filepath.Join(runs, "imported", train.ModelFile), b, 0o644)
	os.MkdirAll(filepath.Join(runs, "empty"), 0o755)

	s := newServer(t, Options{Dirs: []string{runs}})
	list := decode[runsList](t, get(t, s, "/api/runs"))
	if len(list.Runs) != 8 {
		t.Fatalf("%d runs, want 8: %+v", len(list.Runs), list.Runs)
	}
	want := map[string]string{"causal": stateFinished, "unmasked": stateFinished, "badconfig": stateDamaged, "badckpt": stateDamaged,
		"half": stateFinished, "interrupted": stateInterrupted, "failed": stateFailed, "imported": stateModel}
	for name, state := range want {
		r := runByID(t, list, "runs/"+name)
		if r.State != state {
			t.Errorf("%s: state %q (%s), want %q", name, r.State, r.Problem, state)
		}
	}
	if p := runByID(t, list, "runs/badconfig").Problem; !strings.Contains(p, "config.toml") {
		t.Errorf("badconfig's problem %q does not name config.toml", p)
	}
	causal, half := runByID(t, list, "runs/causal"), runByID(t, list, "runs/half")
	if half.Rows != causal.Rows || half.BadRows != 1 || half.Step != causal.Step {
		t.Errorf("half-written metrics: %d rows (%d bad), step %d; want %d rows, 1 bad, step %d (the cut row not read)",
			half.Rows, half.BadRows, half.Step, causal.Rows, causal.Step)
	}
	if causal.Step != 20 || causal.Total != 20 || causal.TrainLoss == nil || causal.TestLoss == nil || causal.Params == 0 {
		t.Errorf("causal run: %+v", causal)
	}
	// What tells the runs apart: the mask (the interrupted runs log every
	// 5 steps); what they share (the model's size) is not shown.
	if d := fmt.Sprint(runByID(t, list, "runs/unmasked").Differs); d != "[model.mask=false train.log_every=20]" {
		t.Errorf("unmasked differs: %v, want [model.mask=false train.log_every=20]", d)
	}
	if d := fmt.Sprint(runByID(t, list, "runs/interrupted").Differs); d != "[train.log_every=5]" {
		t.Errorf("interrupted differs: %v, want [train.log_every=5]", d)
	}
	// A run's own page lists its departures from the defaults, without the
	// keys every run has its own value of (where it writes, its corpus's
	// path, size and hash, the vocabulary that corpus gave).
	page := decode[runPage](t, get(t, s, "/api/run?id=runs/unmasked"))
	if !slices.Contains(page.Differs, "model.mask=false") {
		t.Errorf("the unmasked run's page: differs %q, want model.mask=false among them", page.Differs)
	}
	for _, d := range page.Differs {
		if key, _, _ := strings.Cut(d, "="); slices.Contains([]string{"train.out", "data.path", "data.sha256", "data.size", "model.vocab"}, key) {
			t.Errorf("the unmasked run's page lists the bookkeeping setting %s among %q", d, page.Differs)
		}
	}

	// A new run shows up, a deleted one goes away (after the scan interval).
	copyRun(t, causalRun, filepath.Join(runs, "new"))
	os.RemoveAll(filepath.Join(runs, "unmasked"))
	age(s, 150*time.Millisecond) // a run looked up at once is found by a fresh scan
	if w := get(t, s, "/api/run?id=runs/new"); w.Code != 200 {
		t.Fatalf("a run made after the server started: %d %s", w.Code, w.Body)
	}
	age(s, scanEvery)
	list = decode[runsList](t, get(t, s, "/api/runs"))
	ids := fmt.Sprint(list.Runs)
	if !strings.Contains(ids, "runs/new") || strings.Contains(ids, "runs/unmasked") {
		t.Errorf("after adding new and deleting unmasked: %v", ids)
	}
}

// TestTrainingState: a run whose folder lock a process holds is training.
func TestTrainingState(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "x"))
	started := make(chan struct{})
	release := make(chan struct{})
	c := testmodel.Config(filepath.Join(runs, "live"), true, 1000)
	c.Train.LogEvery = 5
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := train.Run(t.Context(), c, train.Options{AfterStep: func(step int) {
			if step == 10 {
				once.Do(func() { close(started) })
				<-release
			}
		}})
		done <- err
	}()
	<-started
	s := newServer(t, Options{Dirs: []string{runs}})
	r := decode[runPage](t, get(t, s, "/api/run?id=runs/live"))
	close(release)
	if r.State != stateTraining || r.PID != os.Getpid() || r.Step != 10 {
		t.Errorf("a run being trained: state %q pid %d step %d, want training, pid %d, step 10", r.State, r.PID, r.Step, os.Getpid())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSafety: ids and paths that would leave the folders, symlinks out,
// other hosts, oversize requests and writes are refused.
func TestSafety(t *testing.T) {
	fixtures(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	outside := filepath.Join(dir, "outside")
	copyRun(t, causalRun, filepath.Join(runs, "ok"))
	copyRun(t, causalRun, outside)
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("SECRET"), 0o644)
	// A symlinked run folder leading out, and a run whose metrics and
	// model are symlinks out.
	if err := os.Symlink(outside, filepath.Join(runs, "linkdir")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(runs, "linkfiles"), 0o755)
	b, _ := os.ReadFile(filepath.Join(causalRun, train.ConfigFile))
	os.WriteFile(filepath.Join(runs, "linkfiles", train.ConfigFile), b, 0o644)
	os.Symlink(filepath.Join(outside, train.MetricsFile), filepath.Join(runs, "linkfiles", train.MetricsFile))
	os.Symlink(filepath.Join(outside, train.ModelFile), filepath.Join(runs, "linkfiles", train.ModelFile))

	s := newServer(t, Options{Dirs: []string{runs}})
	for _, tc := range []struct {
		target string
		code   int
	}{
		{"/api/run?id=" + url.QueryEscape("../outside"), 400},
		{"/api/run?id=" + url.QueryEscape("runs/../../outside"), 400},
		{"/api/run?id=" + url.QueryEscape(outside), 400}, // absolute
		{"/api/run?id=" + url.QueryEscape("/etc/passwd"), 400},
		{"/api/run?id=" + url.QueryEscape(`runs\..\..\outside`), 400},
		{"/api/run?id=" + url.QueryEscape("runs/ok\x00"), 400},
		{"/api/run?id=" + strings.Repeat("a", maxIDLen+1), 400},
		{"/api/run?id=", 400},
		{"/api/run?id=runs/linkdir", 404}, // not followed, so not a run
		{"/api/run?id=runs/nothing", 404},
		{"/api/metrics?id=runs/ok", 200},
		{"/api/compare?id=runs/ok", 400}, // a run, not a comparison
		{"/assets/../../secret.txt", 0},  // the mux cleans it: never the file
		{"/assets/%2e%2e/%2e%2e/secret.txt", 0},
		{"/assets/" + url.PathEscape(filepath.Join(dir, "secret.txt")), 0},
		{"/api/runs?" + strings.Repeat("x", maxQueryBytes+1), 414},
	} {
		w := get(t, s, tc.target)
		if strings.Contains(w.Body.String(), "SECRET") || (tc.code != 0 && w.Code != tc.code) || (tc.code == 0 && w.Code == 200) {
			t.Errorf("GET %.80s: %d %.200s, want %d", tc.target, w.Code, w.Body, tc.code)
		}
	}
	list := decode[runsList](t, get(t, s, "/api/runs"))
	for _, r := range list.Runs {
		if r.ID == "runs/linkdir" {
			t.Errorf("the symlinked folder is listed: %+v", r)
		}
	}
	// The symlinked files are not read: no rows, no model.
	lf := runByID(t, list, "runs/linkfiles")
	if lf.Rows != 0 || lf.HasModel {
		t.Errorf("a run's symlinks out were followed: %d rows, model %v", lf.Rows, lf.HasModel)
	}
	if w := get(t, s, "/api/metrics?id=runs/linkfiles"); w.Code == 200 && strings.Contains(w.Body.String(), `"step":[1`) {
		t.Errorf("metrics through a symlink out: %s", w.Body)
	}
	if w := post(s, "/api/generate", `{"id":"runs/linkfiles","prompt":"a","tokens":1}`); w.Code == 200 {
		t.Errorf("generation from a model symlinked out: %d %s", w.Code, w.Body)
	}

	// Only loopback Host headers, unless AnyHost.
	req := httptest.NewRequest("GET", "/api/runs", nil)
	req.Host = "evil.example:8080"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 403 {
		t.Errorf("Host evil.example: %d, want 403", w.Code)
	}
	for _, h := range []string{"localhost:8080", "[::1]:8080", "127.0.0.1"} {
		req.Host = h
		w = httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Errorf("Host %s: %d, want 200", h, w.Code)
		}
	}
	// Read-only: no other method on the read endpoints.
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		req := httptest.NewRequest(m, "/api/run?id=runs/ok", nil)
		req.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 405 {
			t.Errorf("%s /api/run: %d, want 405", m, w.Code)
		}
	}
	// Bounded bodies.
	if w := post(s, "/api/generate", `{"id":"runs/ok","prompt":"`+strings.Repeat("a", maxBodyBytes)+`","tokens":1}`); w.Code != 413 {
		t.Errorf("an oversize body: %d %s, want 413", w.Code, w.Body)
	}
}

func post(h http.Handler, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", target, strings.NewReader(body))
	req.Host = "127.0.0.1:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// events splits an SSE answer into (event, data) pairs.
func events(body string) [][2]string {
	var out [][2]string
	for _, msg := range strings.Split(body, "\n\n") {
		var ev, data string
		for _, line := range strings.Split(msg, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if ev != "" {
			out = append(out, [2]string{ev, data})
		}
	}
	return out
}

// TestGenerate: the streamed tokens are the sampler's for the same seed;
// bad requests are 400; a request beyond the limit is 429; the time limit
// stops a generation.
func TestGenerate(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	copyRun(t, unmaskedRun, filepath.Join(runs, "u"))
	s := newServer(t, Options{Dirs: []string{runs}, Generations: 1, MaxTokens: 50})
	for _, id := range []string{"c", "u"} {
		w := post(s, "/api/generate", `{"id":"runs/`+id+`","prompt":"First","tokens":20,"temperature":0.8,"top_k":10,"seed":7}`)
		if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %d %s", id, w.Code, w.Body)
		}
		var got strings.Builder
		evs := events(w.Body.String())
		for _, e := range evs {
			if e[0] == "token" {
				var tok string
				json.Unmarshal([]byte(e[1]), &tok)
				got.WriteString(tok)
			}
		}
		if last := evs[len(evs)-1]; last[0] != "done" || !strings.Contains(last[1], `"tokens":20`) {
			t.Errorf("%s: last event %v, want done with 20 tokens", id, last)
		}
		m, _ := savedmodel.Load(filepath.Join(runs, id, train.ModelFile))
		smp, err := sample.New(m, graph.Backend{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		smp.Generate("First", sample.Options{Tokens: 20, Temperature: 0.8, TopK: 10, Seed: 7}, func(s string) error { want.WriteString(s); return nil })
		smp.Close()
		if got.String() != want.String() {
			t.Errorf("%s: streamed %q, the sampler draws %q", id, got.String(), want.String())
		}
	}
	for _, body := range []string{
		`{"id":"runs/c","prompt":"First","tokens":0}`,
		`{"id":"runs/c","prompt":"First","tokens":51}`,
		`{"id":"runs/c","prompt":"First","tokens":5,"temperature":-1}`,
		`{"id":"runs/c","prompt":"First","tokens":5,"top_p":2}`,
		`{"id":"runs/c","prompt":"First","tokens":5,"top_k":-1}`,
		`{"id":"runs/c","prompt":"€€€","tokens":5}`, // outside the vocabulary
		`{"id":"runs/c","prompt":"","tokens":5}`,
		`{"id":"runs/c","prompt":"First","tokens":5,"bogus":1}`,
		`{"id":"../x","prompt":"First","tokens":5}`,
		`not json`,
	} {
		if w := post(s, "/api/generate", body); w.Code != 400 || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s: %d %s, want 400 with an error", body, w.Code, w.Body)
		}
	}
	// Busy: the one slot taken.
	s.slots <- struct{}{}
	w := post(s, "/api/generate", `{"id":"runs/c","prompt":"First","tokens":5}`)
	if w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Errorf("beyond the limit: %d %s, want 429 with Retry-After", w.Code, w.Body)
	}
	if w := get(t, s, "/api/attention?id=runs/c&text=First"); w.Code != 429 {
		t.Errorf("attention beyond the limit: %d, want 429", w.Code)
	}
	<-s.slots
	// The time limit.
	s.opts.TimeLimit = time.Nanosecond
	w = post(s, "/api/generate", `{"id":"runs/c","prompt":"First","tokens":50}`)
	evs := events(w.Body.String())
	if len(evs) == 0 || evs[len(evs)-1][0] != "done" || !strings.Contains(evs[len(evs)-1][1], "time limit") {
		t.Errorf("with a 1 ns time limit: %v", evs)
	}
}

// TestGenerateConcurrent: the limit holds under concurrent requests, each
// answered 200 or 429, and the model is loaded once.
func TestGenerateConcurrent(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	loads := 0
	var mu sync.Mutex
	s := newServer(t, Options{Dirs: []string{runs}, Generations: 2, OpenModel: func(p string) (*savedmodel.Model, error) {
		mu.Lock()
		loads++
		mu.Unlock()
		return savedmodel.Load(p)
	}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make(chan int, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := http.Post(srv.URL+"/api/generate", "application/json", strings.NewReader(`{"id":"runs/c","prompt":"First","tokens":300}`))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			codes <- r.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		switch c {
		case 200:
			ok++
		case 429:
		default:
			t.Errorf("status %d", c)
		}
	}
	if ok == 0 || loads != 1 {
		t.Errorf("%d answered, the model loaded %d times; want some answered and one load", ok, loads)
	}
	if used, _ := s.models.usage(); used <= 0 {
		t.Errorf("model memory in use %d after the generations, want the kept model and samplers", used)
	}
}

// TestAttention: the served maps are sample.Attention's numbers (6
// significant digits), for the causal and the unmasked model; a text
// longer than the context keeps its last tokens, as gptg attention does.
func TestAttention(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	copyRun(t, unmaskedRun, filepath.Join(runs, "u"))
	s := newServer(t, Options{Dirs: []string{runs}})
	for _, tc := range []struct{ id, text string }{{"c", "First Cit"}, {"u", "First"}, {"c", "First Citizen: Before"}} {
		w := get(t, s, "/api/attention?id=runs/"+tc.id+"&text="+url.QueryEscape(tc.text))
		if w.Code != 200 {
			t.Fatalf("%v: %d %s", tc, w.Code, w.Body)
		}
		var got struct {
			Tokens  []string
			Dropped int
			Blocks  int
			Heads   int
			Maps    [][][]float64
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		m, _ := savedmodel.Load(filepath.Join(runs, tc.id, train.ModelFile))
		ids, _ := m.Vocab.Encode(tc.text)
		if T := m.Spec.Context; len(ids) > T {
			ids = ids[len(ids)-T:]
		}
		smp, _ := sample.New(m, graph.Backend{Threads: 1})
		want, err := smp.Attention(ids)
		smp.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Tokens) != len(ids) || got.Dropped != len([]rune(tc.text))-len(ids) || got.Blocks != len(want) || got.Heads != len(want[0]) {
			t.Fatalf("%v: %d tokens (%d dropped), %d×%d maps; want %d tokens, %d×%d", tc, len(got.Tokens), got.Dropped, got.Blocks, got.Heads, len(ids), len(want), len(want[0]))
		}
		for b := range want {
			for h := range want[b] {
				for i, v := range want[b][h].W {
					if g := got.Maps[b][h][i]; math.Abs(g-v) > 1e-6*math.Max(1, math.Abs(v)) {
						t.Fatalf("%v block %d head %d [%d]: served %v, sample.Attention %v", tc, b, h, i, g, v)
					}
				}
			}
		}
	}
	for _, target := range []string{"/api/attention?id=runs/c", "/api/attention?id=runs/c&text=" + url.QueryEscape("€"),
		"/api/attention?id=runs/c&text=" + strings.Repeat("a", maxTextBytes+1)} {
		if w := get(t, s, target); w.Code != 400 {
			t.Errorf("%.60s: %d, want 400", target, w.Code)
		}
	}
}

// TestModelMemory: under a budget for one model, using a second drops the
// first; a model larger than the budget is refused with a message.
func TestModelMemory(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "a"))
	copyRun(t, causalRun, filepath.Join(runs, "b"))
	m, _ := savedmodel.Load(causalModelFile)
	one := int64(samplerMemory(m.Spec)) + int64(8*m.Spec.ParamCount())
	s := newServer(t, Options{Dirs: []string{runs}, ModelMemory: one + one/2})
	for _, id := range []string{"a", "b", "a"} {
		if w := post(s, "/api/generate", `{"id":"runs/`+id+`","prompt":"First","tokens":3}`); w.Code != 200 {
			t.Fatalf("%s: %d %s", id, w.Code, w.Body)
		}
		if used, _ := s.models.usage(); used > one+one/2 || used < one/2 {
			t.Errorf("after %s: %d bytes held; want a model's and at most %d", id, used, one+one/2)
		}
	}
	small := newServer(t, Options{Dirs: []string{runs}, ModelMemory: one / 2})
	w := post(small, "/api/generate", `{"id":"runs/a","prompt":"First","tokens":3}`)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "--model-memory") {
		t.Errorf("a model over the budget: %d %s", w.Code, w.Body)
	}
	// A newer model file (train saves at each evaluation) is loaded anew
	// (by a server with room for the new one, larger than one).
	s = newServer(t, Options{Dirs: []string{runs}, ModelMemory: 1 << 30})
	if w := get(t, s, "/api/attention?id=runs/a&text=First"); w.Code != 200 || !strings.Contains(w.Body.String(), `"mask":true`) {
		t.Fatalf("before the model file was replaced: %d %.100s", w.Code, w.Body)
	}
	replaceModel(t, filepath.Join(runs, "a"), unmaskedMF)
	w = get(t, s, "/api/attention?id=runs/a&text=First")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"mask":false`) {
		t.Errorf("after the model file was replaced: %d %.100s", w.Code, w.Body)
	}
}

// openLive serves a copy of the causal run as runs/c and opens its live
// stream; the server and the stream close when the test ends.
func openLive(t *testing.T) (runs string, resp *http.Response) {
	t.Helper()
	fixtures(t)
	runs = filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	srv := httptest.NewServer(newServer(t, Options{Dirs: []string{runs}}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/api/live?id=runs/c")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return runs, resp
}

// replaceModel puts the model file from in run's place the way train
// does, by renaming a whole new file over it.
func replaceModel(t *testing.T, run, from string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(run, train.ModelFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(run, train.ModelFile)); err != nil {
		t.Fatal(err)
	}
}

// TestLive: the stream sends the rows there are, then each row once it is
// whole, and a reset when the file is rewritten.
func TestLive(t *testing.T) {
	runs, resp := openLive(t)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	next := func() (string, string) {
		var ev, data string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "" && ev != "":
				return ev, data
			}
		}
	}
	ev, data := next()
	var cols columns
	json.Unmarshal([]byte(data), &cols)
	if ev != "rows" || len(cols.Step) != 1 || cols.Step[0] != 20 {
		t.Fatalf("first event %s %s, want the one row of step 20", ev, data)
	}
	path := filepath.Join(runs, "c", train.MetricsFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"step":21,"loss":1.5,"lr":0.001,"tokens_per_s":100}` + "\n" + `{"step":22,"lo`)
	ev, data = next()
	if ev != "rows" || !strings.Contains(data, `"step":[21]`) {
		t.Fatalf("after appending a row and half of another: %s %s, want step 21 alone", ev, data)
	}
	f.WriteString(`ss":1.4,"test_loss":1.6}` + "\n")
	f.Close()
	ev, data = next()
	if ev != "rows" || !strings.Contains(data, `"step":[22]`) || !strings.Contains(data, `"test_loss":[1.6]`) {
		t.Fatalf("once the row is whole: %s %s", ev, data)
	}
	// A resume rewrites the file (atomically): a reset, then its rows.
	os.WriteFile(path+".new", []byte(`{"step":5,"loss":3}`+"\n"), 0o644)
	os.Rename(path+".new", path)
	if ev, _ = next(); ev != "reset" {
		t.Fatalf("after the file was replaced: %s, want reset", ev)
	}
	if ev, data = next(); ev != "rows" || !strings.Contains(data, `"step":[5]`) {
		t.Fatalf("after the reset: %s %s", ev, data)
	}
}

// TestCompare: an ablate folder's table and each variant's mean ± sd
// curve over its seeds, and a sweep folder found by its manifest.
func TestCompare(t *testing.T) {
	fixtures(t)
	dir := filepath.Join(t.TempDir(), "runs")
	out := filepath.Join(dir, "abl")
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string][2]float64{} // variant → mean, sd of the loss at step 20
	for _, v := range []string{"a", "b"} {
		var xs []float64
		for _, seed := range []string{"1", "2", "3"} {
			d := filepath.Join(out, v, "seed-"+seed)
			copyRun(t, causalRun, d)
			x := 2 + rng.Float64()
			xs = append(xs, x)
			os.WriteFile(filepath.Join(d, train.MetricsFile), fmt.Appendf(nil, `{"step":10,"loss":3}`+"\n"+`{"step":20,"loss":%v,"test_loss":%v}`+"\n", x, x+0.1), 0o644)
		}
		mean := (xs[0] + xs[1] + xs[2]) / 3
		ss := 0.0
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		want[v] = [2]float64{mean, math.Sqrt(ss / 2)}
	}
	os.WriteFile(filepath.Join(out, "summary.csv"), []byte("name,differs,n,test_loss_mean,baseline\na,,3,2.5,true\nb,heads=2,3,2.4,false\n"), 0o644)
	os.WriteFile(filepath.Join(out, "runs.csv"), []byte("name,seed,dir,status\na,1,x,finished\nb,1,x,finished\na,2,x,finished\nb,2,x,finished\na,3,x,finished\nb,3,x,finished\n"), 0o644)
	// A sweep: its manifest names the runs; no summary yet.
	sw := filepath.Join(dir, "sw")
	copyRun(t, causalRun, filepath.Join(sw, "runs", "lr-1"))
	copyRun(t, causalRun, filepath.Join(sw, "runs", "lr-2"))
	os.WriteFile(filepath.Join(sw, "manifest.jsonl"), []byte(`{"index":0,"variant":"lr=1","config":"c.toml","sets":[],"dir":"runs/lr-1"}`+"\n"+
		`{"index":1,"variant":"lr=2","config":"c.toml","sets":[],"dir":"runs/lr-2"}`+"\n"+`{"index":2,"variant":"lr=2","config":"c.toml","sets":[],"dir":"runs/lr-3"}`+"\n"), 0o644)

	s := newServer(t, Options{Dirs: []string{dir}})
	list := decode[runsList](t, get(t, s, "/api/runs"))
	if len(list.Comparisons) != 2 || len(list.Runs) != 8 {
		t.Fatalf("comparisons %+v, %d runs; want abl and sw, 8 runs", list.Comparisons, len(list.Runs))
	}
	c := decode[compareAnswer](t, get(t, s, "/api/compare?id=runs/abl"))
	if c.Kind != kindAblate || len(c.Rows) != 2 || c.Header[0] != "name" || len(c.Variants) != 2 {
		t.Fatalf("ablate comparison: %+v", c)
	}
	for _, v := range c.Variants {
		w := want[v.Name]
		tr := v.Train
		if len(v.Runs) != 3 || len(tr.Step) != 2 || tr.Step[1] != 20 || tr.N[1] != 3 ||
			math.Abs(tr.Mean[1]-w[0]) > 1e-9 || math.Abs(tr.SD[1]-w[1]) > 1e-9 || math.Abs(v.Test.Mean[0]-w[0]-0.1) > 1e-9 {
			t.Errorf("variant %s: %+v, want mean %v sd %v at step 20 over 3 runs", v.Name, v, w[0], w[1])
		}
	}
	c = decode[compareAnswer](t, get(t, s, "/api/compare?id=runs/sw"))
	if c.Kind != kindSweep || len(c.Variants) != 2 || c.Variants[1].Plan != 2 || len(c.Variants[1].Runs) != 1 || !strings.Contains(c.Note, "collect") {
		t.Errorf("sweep comparison: %+v", c)
	}
	if w := get(t, s, "/api/compare?id=runs/abl/a/seed-1"); w.Code != 400 {
		t.Errorf("a run as a comparison: %d", w.Code)
	}
}

// TestPages: the pages and the embedded assets are served, uPlot with its
// licence.
func TestPages(t *testing.T) {
	fixtures(t)
	s := newServer(t, Options{Dirs: []string{t.TempDir()}})
	for target, want := range map[string]string{
		"/": "<title>gptg serve</title>", "/run?id=x": "app.js", "/compare?id=x": "app.js",
		"/assets/app.js": "EventSource", "/assets/uplot/uPlot.iife.min.js": "uPlot", "/assets/uplot/LICENSE": "MIT",
	} {
		w := get(t, s, target)
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d, want 200 holding %q", target, w.Code, want)
		}
		if w.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no Content-Security-Policy", target)
		}
	}
	if w := get(t, s, "/nothing"); w.Code != 404 {
		t.Errorf("/nothing: %d", w.Code)
	}
	if _, err := New(Options{Dirs: []string{filepath.Join(t.TempDir(), "missing")}}); err == nil {
		t.Error("a missing folder was accepted")
	}
}

// TestSummary: the model summary is made once per model file version.
func TestSummary(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	calls := 0
	s := newServer(t, Options{Dirs: []string{runs}, Generations: 1, Summary: func(p string) (string, error) {
		calls++
		return "summary of " + filepath.Base(filepath.Dir(p)), nil
	}})
	for range 2 {
		w := get(t, s, "/api/summary?id=runs/c")
		if w.Code != 200 || !strings.Contains(w.Body.String(), "summary of c") {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	replaceModel(t, filepath.Join(runs, "c"), unmaskedMF)
	if w := get(t, s, "/api/summary?id=runs/c"); w.Code != 200 || calls != 2 {
		t.Errorf("after the model file was replaced: %d, %d summaries made; want 2", w.Code, calls)
	}
	if w := get(t, s, "/api/summary?id=runs/nothing"); w.Code != 404 {
		t.Errorf("a missing run: %d", w.Code)
	}
}

// TestPathsFromTheServedFolder: the run page shows the model file as the
// ids name it and the config's origin paths from the folder the ids start
// from, not this machine's absolute paths: the same commands in another
// folder show the same page.
func TestPathsFromTheServedFolder(t *testing.T) {
	fixtures(t)
	project := t.TempDir()
	runs := filepath.Join(project, "runs")
	copyRun(t, causalRun, filepath.Join(runs, "c"))
	cfg := filepath.Join(runs, "c", "config.toml")
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf("# made from config: %q\n# data file: %q (where data.path led)\n", filepath.Join(project, "configs", "c.toml"), "/elsewhere/c.txt")
	if err := os.WriteFile(cfg, append([]byte(header), text...), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{Dirs: []string{runs}, Generations: 1, Summary: func(p string) (string, error) {
		return "file: " + p + "\nformat: gptg/1\n", nil
	}})
	w := get(t, s, "/api/summary?id=runs/c")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"file: runs/c/model.safetensors\n`) || strings.Contains(w.Body.String(), project) {
		t.Errorf("/api/summary: %d %s; want the model file as runs/c/model.safetensors", w.Code, w.Body)
	}
	var run struct{ Config string }
	w = get(t, s, "/api/run?id=runs/c")
	if err := json.Unmarshal(w.Body.Bytes(), &run); err != nil || w.Code != 200 {
		t.Fatalf("/api/run: %d %s", w.Code, w.Body)
	}
	if want := "# made from config: \"configs/c.toml\"\n# data file: \"/elsewhere/c.txt\""; !strings.HasPrefix(run.Config, want) {
		t.Errorf("the config shows\n%.300s\nwant it to start\n%s", run.Config, want)
	}
}

// TestLiveEndsWhenDeleted: the stream of a run folder that is deleted ends.
func TestLiveEndsWhenDeleted(t *testing.T) {
	runs, resp := openLive(t)
	os.RemoveAll(filepath.Join(runs, "c"))
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the stream ended with %v", err)
		}
	case <-time.After(testwait.Hang):
		t.Fatalf("the stream of a deleted run went on for %v", testwait.Hang)
	}
}

// TestTooLargeDropsUnusedModels: a model refused as too large for what
// the process may still take (TooLarge) while another model is loaded and
// unused is tried again after that one is dropped: two 50M models served
// in turn under ulimit -v 2.7 GB got 507 from the second swap on, as the
// check ran with the model about to be evicted still held.
func TestTooLargeDropsUnusedModels(t *testing.T) {
	fixtures(t)
	runs := filepath.Join(t.TempDir(), "runs")
	copyRun(t, causalRun, filepath.Join(runs, "a"))
	copyRun(t, causalRun, filepath.Join(runs, "b"))
	var s *Server
	s = newServer(t, Options{Dirs: []string{runs}, Generations: 2, OpenModel: func(p string) (*savedmodel.Model, error) {
		// The process has room for one model only.
		s.models.mu.Lock()
		loaded := 0
		for _, e := range s.models.entries {
			if e.model != nil {
				loaded++
			}
		}
		s.models.mu.Unlock()
		if loaded > 0 {
			return nil, TooLarge(errors.New("more than this process may still use"))
		}
		return savedmodel.Load(p)
	}})
	for i, id := range []string{"a", "b", "a", "b"} {
		w := post(s, "/api/generate", `{"id":"runs/`+id+`","prompt":"First","tokens":2}`)
		if w.Code != 200 {
			t.Fatalf("generation %d (runs/%s): %d %s", i, id, w.Code, w.Body.String())
		}
	}
}

// TestCompareCountsARunOnce: a runs.csv naming one run many times draws
// it once, not as a mean "over 400 runs" with sd 0 for 400 lines naming
// one seed.
func TestCompareCountsARunOnce(t *testing.T) {
	fixtures(t)
	dir := filepath.Join(t.TempDir(), "runs")
	out := filepath.Join(dir, "abl")
	copyRun(t, causalRun, filepath.Join(out, "a", "seed-1"))
	os.WriteFile(filepath.Join(out, "a", "seed-1", train.MetricsFile), []byte(`{"step":10,"loss":3}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(out, "summary.csv"), []byte("name,n\na,1\n"), 0o644)
	csv := "name,seed,dir,status\n" + strings.Repeat("a,1,x,finished\n", 400) + "..,0,x,x\n../..,0,x,x\n"
	os.WriteFile(filepath.Join(out, "runs.csv"), []byte(csv), 0o644)
	s := newServer(t, Options{Dirs: []string{dir}})
	c := decode[compareAnswer](t, get(t, s, "/api/compare?id=runs/abl"))
	if len(c.Variants) == 0 || len(c.Variants[0].Runs) != 1 || len(c.Variants[0].Train.N) != 1 || c.Variants[0].Train.N[0] != 1 {
		t.Fatalf("one run named 400 times: %+v, want it drawn once", c.Variants)
	}
}
