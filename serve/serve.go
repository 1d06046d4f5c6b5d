// Package serve is gptg's local web view of run folders: a table of runs,
// their loss curves pushed live as train appends to metrics.jsonl, a
// sampling playground that streams tokens, an attention explorer and the
// comparisons of gptg ablate and gptg sweep. It only reads the folders it
// is given; the one thing a request can make it do is run a model
// (generation and attention), bounded in number, time and memory.
//
// The pages are embedded (assets/): HTML, CSS, JavaScript and a vendored
// copy of uPlot for the charts, so that the server works offline.
package serve

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/memlimit"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/train"
)

//go:embed assets
var assets embed.FS

// Options configure a Server. Zero fields take the defaults below.
type Options struct {
	Dirs []string // the folders whose run folders are served
	// Generations bounds the model runs (generations, attention maps) at
	// once; one more is answered 429 "busy", never queued.
	Generations int
	MaxTokens   int           // tokens one generation may ask for
	TimeLimit   time.Duration // one generation's time
	// ModelMemory bounds, in bytes, the loaded models and their graphs;
	// the least recently used are dropped to stay under it.
	ModelMemory int64
	Backend     graph.Backend // how the models compute (Threads 0 = 1)
	// OpenModel loads a model file (default savedmodel.Load); gptg passes
	// the loader its other commands use, with its size checks.
	OpenModel func(path string) (*savedmodel.Model, error)
	// Summary describes a model file as gptg inspect prints it (nil: the
	// run page shows no summary).
	Summary func(path string) (string, error)
	// AnyHost accepts requests whatever their Host header. Off, only
	// localhost, 127.0.0.1 and [::1] are accepted, so that a web page on
	// another site cannot reach the server through DNS rebinding.
	AnyHost bool
}

// Defaults of Options.
const (
	DefaultGenerations = 2
	DefaultMaxTokens   = 2000
	DefaultTimeLimit   = 60 * time.Second
	DefaultModelMemory = 2 << 30
)

// Bounds of requests.
const (
	maxBodyBytes  = 64 << 10 // a generation request's JSON
	maxQueryBytes = 16 << 10
	maxTextBytes  = 4 << 10 // a prompt or an attention text
	scanEvery     = time.Second
	liveEvery     = 250 * time.Millisecond // how often a live stream looks for new rows
	liveChunk     = 4096                   // rows in one event of a live stream's start
	heartbeat     = 15 * time.Second
)

// The model memory is capped by what the process may still take when the
// server starts (internal/memlimit: ulimit -v and -d, the cgroup's limit,
// the machine), less serverReserve for the rest of the server (its metrics
// cache, requests' answers, the runtime): a model admitted under a larger
// budget ended the whole server in the runtime's out-of-memory trace.
// findHeadroom is a variable so that the tests can fake a limit.
var findHeadroom = memlimit.Find

const serverReserve = 256 << 20

// formatGiB prints a --model-memory as given, in GiB.
func formatGiB(n int64) string {
	return strconv.FormatFloat(float64(n)/config.GiB, 'g', 4, 64) + " GiB"
}

// Bounds of what clients can hold; variables so that the tests can lower
// them.
var (
	// A client that takes none of an event's bytes for this long (a page
	// that stopped reading, a client that never reads) is dropped: its
	// unsent events would otherwise stay in memory for as long as it
	// keeps the connection.
	writeTimeout = 30 * time.Second
	// maxStreams bounds the live metrics streams at once (a page holds
	// one per run it shows); more are answered 429.
	maxStreams = 64
	// maxReads bounds the whole-file reads of metrics at once
	// (/api/metrics): each holds its rows, up to maxMetricsBytes' worth;
	// more wait their turn.
	maxReads = 2
	// maxAttentionWeights bounds one /api/attention answer (about 9
	// bytes of JSON a weight).
	maxAttentionWeights = 16 << 20
	// gridAbove: a model of more heads (blocks × heads) answers the
	// block × head summary and one head's map instead of every map, as
	// gptg attention shows it (GPT-2's 144 maps are a wall of stamps).
	gridAbove = 16
)

// Server answers the pages and the API. It is safe for concurrent use.
type Server struct {
	// Note, when not empty, is what the server changed of its options,
	// for its log: a --model-memory larger than the process may take.
	Note string

	opts  Options
	roots []*root
	mux   *http.ServeMux

	mu       sync.Mutex
	scanned  time.Time
	folders  map[string]*folder
	problems []string
	caches   map[string]*runCache
	runsJSON []byte // the last /api/runs answer, kept for scanEvery
	runsAt   time.Time

	runsBuild sync.Mutex // held while an /api/runs answer is made

	summaries sync.Map // model path → summaryResult of its latest version
	models    *modelCache
	metrics   *metricsCache
	slots     chan struct{}
	streams   chan struct{} // live metrics streams (maxStreams)
	reads     chan struct{} // whole metrics reads (maxReads)
}

// New opens the folders and prepares the server.
func New(opts Options) (*Server, error) {
	if len(opts.Dirs) == 0 {
		return nil, errors.New("no folder to serve")
	}
	if opts.Generations <= 0 {
		opts.Generations = DefaultGenerations
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = DefaultTimeLimit
	}
	given := opts.ModelMemory > 0
	if !given {
		opts.ModelMemory = DefaultModelMemory
	}
	if opts.Backend.Threads <= 0 {
		opts.Backend.Threads = 1
	}
	if opts.OpenModel == nil {
		opts.OpenModel = savedmodel.Load
	}
	s := &Server{opts: opts, caches: map[string]*runCache{}, slots: make(chan struct{}, opts.Generations),
		streams: make(chan struct{}, maxStreams), reads: make(chan struct{}, maxReads)}
	for _, d := range opts.Dirs {
		r, err := openRoot(d)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.roots = append(s.roots, r)
	}
	labelRoots(s.roots)
	budget, limit := opts.ModelMemory, ""
	if h, ok := findHeadroom(); ok && float64(budget) > h.Bytes-serverReserve {
		budget, limit = max(int64(h.Bytes-serverReserve), 1), fmt.Sprintf("this process may use, under %s", h.Limit)
		what := "--model-memory " + formatGiB(opts.ModelMemory)
		if !given {
			what += " (the default)"
		}
		s.Note = fmt.Sprintf("%s is more than this process may use (%s, under %s, less %s for the server itself): using %s",
			what, config.FormatBytes(h.Bytes), h.Limit, config.FormatBytes(serverReserve), config.FormatBytes(float64(budget)))
		if budget < 1<<20 {
			s.Note += ": no model can be run (the runs and their curves are served)"
		}
	}
	s.models = newModelCache(budget, limit, opts.OpenModel, opts.Backend)
	s.metrics = newMetricsCache(metricsMemory)
	s.routes()
	return s, nil
}

// Close releases the loaded models and the folders.
func (s *Server) Close() {
	if s.models != nil {
		s.models.close()
	}
	for _, r := range s.roots {
		r.fs.Close()
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	page := s.page
	m.HandleFunc("GET /{$}", page)
	m.HandleFunc("GET /run", page)
	m.HandleFunc("GET /compare", page)
	static, _ := fs.Sub(assets, "assets")
	m.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	m.HandleFunc("GET /api/runs", s.apiRuns)
	m.HandleFunc("GET /api/run", s.apiRun)
	m.HandleFunc("GET /api/summary", s.apiSummary)
	m.HandleFunc("GET /api/metrics", s.apiMetrics)
	m.HandleFunc("GET /api/live", s.apiLive)
	m.HandleFunc("POST /api/generate", s.apiGenerate)
	m.HandleFunc("GET /api/attention", s.apiAttention)
	m.HandleFunc("GET /api/compare", s.apiCompare)
	s.mux = m
}

// ServeHTTP checks what every request must satisfy, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	if !s.opts.AnyHost && !loopbackHost(r.Host) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("host %s refused: this server answers only localhost, 127.0.0.1 and [::1] (start it with --addr to listen elsewhere)", quote.Value(r.Host)))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		if msg := crossSite(r); msg != "" {
			httpError(w, http.StatusForbidden, msg)
			return
		}
	}
	if len(r.URL.RawQuery) > maxQueryBytes {
		httpError(w, http.StatusRequestURITooLong, fmt.Sprintf("the query is longer than %d bytes", maxQueryBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	s.mux.ServeHTTP(w, r)
}

// loopbackHost accepts the Host header of a request to a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossSite refuses an API request that a browser sent for a page of
// another site, told by the Fetch metadata (Sec-Fetch-Site, every browser
// since 2023) or an Origin other than the Host. The Host check alone does
// not stop it: a page elsewhere may POST to http://127.0.0.1:8080 (its
// Host is then right) and make the machine run models, or open live
// streams until none is left for the user's own pages; it cannot read the
// answers, but it need not. Requests without either header (curl, scripts)
// are not a browser's and pass. The pages themselves may be opened from
// anywhere (a link); only the API is refused.
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Sprintf("refused: a request from another site's page (Sec-Fetch-Site: %s); the API answers this server's own pages", quote.Value(site))
	}
	if o := r.Header.Get("Origin"); o != "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		if u, err := url.Parse(o); err != nil || u.Host != r.Host || u.Scheme != scheme {
			return fmt.Sprintf("refused: a request from the page of %s, not of this server (%s)", quote.Value(o), quote.Value(r.Host))
		}
	}
	return ""
}

// page answers the single page the app draws every view in. A run's page
// comes with the run's first state (/api/run's answer) inside it, so that
// it draws without waiting for a request: a headless browser's screenshot,
// taken once the page has loaded, shows the run, not "loading…" (the
// page's live metrics stream keeps the network busy forever, so "wait
// until the network is idle" never comes).
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b, _ := assets.ReadFile("assets/index.html")
	if r.URL.Path == "/run" {
		if f, c, err := s.lookup(r, kindRun); err == nil {
			// encoding/json writes <, > and & as \u escapes: no run's
			// name or config can close the script element.
			state, _ := json.Marshal(s.runPageOf(f, c))
			script := append(append([]byte(`<script id="first-state" type="application/json">`), state...), "</script>\n"...)
			b = bytes.Replace(b, []byte(`<main id="app">`), append(script, `<main id="app">`...), 1)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// httpError answers {"error": msg}.
func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	setWriteDeadline(w)
	w.Write(b)
}

// setWriteDeadline gives the answer writeTimeout to be taken: a client
// that does not read is dropped instead of holding the answer in memory
// (and, for /api/metrics, one of the few reads at a time).
func setWriteDeadline(w http.ResponseWriter) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
}

// requestError is a bad request: its message is for the user, status 4xx.
type requestError struct {
	code int
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// fail answers err: its own status for a requestError, 500 otherwise.
func fail(w http.ResponseWriter, err error) {
	var re *requestError
	if errors.As(err, &re) {
		httpError(w, re.code, re.msg)
		return
	}
	httpError(w, http.StatusInternalServerError, oneLine(err.Error()))
}

// rescan refreshes the list of folders when it is older than scanEvery
// (or always, with force), so that a run started after the server shows
// up and a deleted one goes away. Callers hold s.mu.
func (s *Server) rescan(force bool) {
	if !force && time.Since(s.scanned) < scanEvery {
		return
	}
	s.folders, s.problems = scan(s.roots)
	s.scanned = time.Now()
	for id := range s.caches {
		if s.folders[id] == nil {
			delete(s.caches, id)
			s.metrics.forget(id)
		}
	}
}

// lookup finds the folder a request names by its id (the query value
// "id"), of one of the kinds given.
func (s *Server) lookup(r *http.Request, kinds ...string) (*folder, *runCache, error) {
	return s.lookupID(r.URL.Query().Get("id"), kinds...)
}

func (s *Server) lookupID(id string, kinds ...string) (*folder, *runCache, error) {
	switch {
	case id == "":
		return nil, nil, badRequest("give the run's id: ?id=NAME (the ids are in /api/runs)")
	case len(id) > maxIDLen:
		return nil, nil, badRequest("the id is longer than %d bytes", maxIDLen)
	case strings.HasPrefix(id, "/") || strings.ContainsAny(id, "\\\x00") || !localPath(id):
		return nil, nil, badRequest("%q is not an id: absolute paths, .. and backslashes are refused; the ids are in /api/runs", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rescan(false)
	f := s.folders[id]
	if f == nil && time.Since(s.scanned) > 100*time.Millisecond {
		s.rescan(true) // a run started a moment ago
		f = s.folders[id]
	}
	if f == nil {
		return nil, nil, &requestError{http.StatusNotFound, fmt.Sprintf("no run or comparison %q in the served folders", id)}
	}
	for _, k := range kinds {
		if f.kind == k {
			c := s.caches[id]
			if c == nil {
				c = &runCache{}
				s.caches[id] = c
			}
			return f, c, nil
		}
	}
	return nil, nil, badRequest("%q is a %s folder, not a %s", id, f.kind, strings.Join(kinds, " or "))
}

// runsList is the answer of /api/runs.
type runsList struct {
	Roots       []string     `json:"roots"`
	Runs        []runInfo    `json:"runs"`
	Comparisons []comparison `json:"comparisons"`
	Problems    []string     `json:"problems"`
}

type comparison struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b := s.runsJSON
	if b == nil || time.Since(s.runsAt) >= scanEvery {
		b = nil
	}
	s.mu.Unlock()
	if b == nil {
		var err error
		if b, err = s.runsAnswer(); err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	setWriteDeadline(w) // a client that reads slowly is dropped, not waited for
	w.Write(b)
}

// runsAnswer makes the /api/runs answer and keeps it for scanEvery. The
// run folders are read without s.mu, each under its own cache's lock: a
// run whose files take long to read (a metrics.jsonl of 256 MiB) must not
// hold every other request up while it is read.
func (s *Server) runsAnswer() ([]byte, error) {
	// One answer is made at a time; the requests that waited for it take it.
	s.runsBuild.Lock()
	defer s.runsBuild.Unlock()
	type job struct {
		f *folder
		c *runCache
	}
	s.mu.Lock()
	if s.runsJSON != nil && time.Since(s.runsAt) < scanEvery {
		b := s.runsJSON
		s.mu.Unlock()
		return b, nil
	}
	s.rescan(false)
	list := runsList{Runs: []runInfo{}, Comparisons: []comparison{}, Problems: append([]string{}, s.problems...)}
	for _, root := range s.roots {
		list.Roots = append(list.Roots, root.dir)
	}
	var jobs []job
	for id, f := range s.folders {
		if f.kind != kindRun {
			list.Comparisons = append(list.Comparisons, comparison{ID: id, Name: path.Base(id), Kind: f.kind})
			continue
		}
		c := s.caches[id]
		if c == nil {
			c = &runCache{}
			s.caches[id] = c
		}
		jobs = append(jobs, job{f, c})
	}
	s.mu.Unlock()
	for _, j := range jobs {
		list.Runs = append(list.Runs, j.c.info(j.f))
	}
	sort.Slice(list.Runs, func(i, j int) bool { return list.Runs[i].ID < list.Runs[j].ID })
	sort.Slice(list.Comparisons, func(i, j int) bool { return list.Comparisons[i].ID < list.Comparisons[j].ID })
	fillDiffers(list.Runs)
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.runsJSON, s.runsAt = b, time.Now()
	s.mu.Unlock()
	return b, nil
}

// runPage is the answer of /api/run: the table's row and the config.
type runPage struct {
	runInfo
	Config string `json:"config"`
	Sample struct {
		Prompt      string  `json:"prompt"`
		Tokens      int     `json:"tokens"`
		Temperature float64 `json:"temperature"`
		TopK        int     `json:"top_k"`
		TopP        float64 `json:"top_p"`
	} `json:"sample"`
	Context   int `json:"context"`
	Blocks    int `json:"blocks"`
	Heads     int `json:"heads"`
	MaxTokens int `json:"max_tokens"`
	// Example is the text a run's explorer (and a translation run's
	// playground) starts from (exampleSentence).
	Example string `json:"example,omitempty"`
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	f, c, err := s.lookup(r, kindRun)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, s.runPageOf(f, c))
}

// runPageOf is /api/run's answer for the run folder f.
func (s *Server) runPageOf(f *folder, c *runCache) runPage {
	p := runPage{runInfo: c.info(f), MaxTokens: s.opts.MaxTokens}
	c.mu.Lock()
	p.Config = train.OriginFrom(c.cfgText, filepath.Dir(f.root.abs))
	if c.cfg != nil {
		p.Differs = settingsOf(c.cfg)
		sm := c.cfg.Sample
		p.Sample.Prompt, p.Sample.Tokens, p.Sample.Temperature, p.Sample.TopK, p.Sample.TopP = sm.Prompt, sm.Tokens, sm.Temperature, sm.TopK, sm.TopP
		p.Context, p.Blocks, p.Heads = c.cfg.Model.Context, c.cfg.Model.Blocks, c.cfg.Model.Heads
		p.Example = exampleSentence(c.cfg, c.cfgText)
	}
	c.mu.Unlock()
	if p.Differs == nil {
		p.Differs = []string{}
	}
	return p
}

// summaryResult is a model summary, kept per model file version.
type summaryResult struct {
	key  fileKey
	text string
	err  error
}

func (s *Server) apiSummary(w http.ResponseWriter, r *http.Request) {
	f, _, err := s.lookup(r, kindRun)
	if err != nil {
		fail(w, err)
		return
	}
	if s.opts.Summary == nil {
		writeJSON(w, map[string]string{"summary": ""})
		return
	}
	model, key, err := s.modelPath(f)
	if err != nil {
		fail(w, err)
		return
	}
	// One summary per model file, its latest version: a training run
	// replaces its model at every evaluation.
	v, ok := s.summaries.Load(model)
	if !ok || v.(summaryResult).key != key {
		// Building the model's graph takes memory and time: it waits for a
		// model-running slot, a while at most.
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			s.busy(w)
			return
		}
		text, err := s.opts.Summary(model)
		<-s.slots
		v = summaryResult{key: key, text: text, err: err}
		s.summaries.Store(model, v)
	}
	res := v.(summaryResult)
	if res.err != nil {
		httpError(w, http.StatusUnprocessableEntity, oneLine(res.err.Error()))
		return
	}
	// The summary names the model file as the ids do (runs/x/model.safetensors),
	// not by this machine's absolute path.
	writeJSON(w, map[string]string{"summary": strings.ReplaceAll(res.text, model, path.Join(f.id, train.ModelFile))})
}

// modelPath is the checked path of a run's model file and its version.
func (s *Server) modelPath(f *folder) (string, fileKey, error) {
	rel := path.Join(f.rel, train.ModelFile)
	mf, info, err := f.root.open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fileKey{}, &requestError{http.StatusConflict, fmt.Sprintf("%s has no %s yet: train writes it at the first evaluation or checkpoint", f.id, train.ModelFile)}
	}
	if err != nil {
		return "", fileKey{}, &requestError{http.StatusForbidden, fmt.Sprintf("%s: %v", rel, err)}
	}
	mf.Close()
	real, err := f.root.realPath(rel)
	if err != nil {
		return "", fileKey{}, &requestError{http.StatusForbidden, fmt.Sprintf("%s: %v", rel, err)}
	}
	return real, keyOf(info), nil
}

func (s *Server) apiMetrics(w http.ResponseWriter, r *http.Request) {
	f, _, err := s.lookup(r, kindRun)
	if err != nil {
		fail(w, err)
		return
	}
	select { // a few at a time: each answer holds a whole file's rows as JSON
	case s.reads <- struct{}{}:
		defer func() { <-s.reads }()
	case <-r.Context().Done():
		return
	}
	cols, _, err := s.metrics.columns(f)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	setWriteDeadline(w)
	// Rows parsed from JSON always encode; a client gone mid-answer is
	// not the server's to report.
	cols.writeJSON(w)
}

// apiLive streams a run's metrics as Server-Sent Events: the rows there
// are, then each row as train appends it. Only the bytes appended since
// the last look are read. Events: "rows" (columns), "reset" (the file was
// rewritten, as a resume does: the rows that follow replace the old ones),
// "error" ({"error"}: the file cannot be read or drawn; the stream ends, so
// that the page says so rather than wait for rows that will not come).
func (s *Server) apiLive(w http.ResponseWriter, r *http.Request) {
	f, _, err := s.lookup(r, kindRun)
	if err != nil {
		fail(w, err)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusTooManyRequests, fmt.Sprintf("busy: %d live metrics streams already open, the server's limit; close some pages", maxStreams))
		return
	}
	ev, ok := newEventStream(w)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	// The rows there are, from the server's parsed copy, in events of at
	// most liveChunk rows; then what train appends, read from where the
	// copy ends.
	cols, t, err := s.metrics.columns(f)
	if err != nil {
		sendError(ev, err)
		return
	}
	sent, gone := sendColumns(ev, cols)
	if gone {
		return
	}
	rel := path.Join(f.rel, train.MetricsFile)
	tick := time.NewTicker(liveEvery)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		mf, info, err := f.root.open(rel)
		if err == nil {
			var last time.Time
			last, gone, err = sendAppended(ev, &t, mf, info, sent)
			mf.Close()
			if gone {
				return
			}
			if !last.IsZero() {
				sent, lastWrite = true, last
			}
			if err != nil {
				sendError(ev, err)
				return
			}
		} else if _, serr := f.root.fs.Stat(f.rel); errors.Is(serr, fs.ErrNotExist) {
			return // the run folder was deleted: the page's next try gets a 404
		} else if !errors.Is(err, fs.ErrNotExist) { // a FIFO, a link out of the folder: not train's file
			sendError(ev, unservable(train.MetricsFile, err))
			return
		}
		if !sent { // the first event, even without rows: the page stops waiting
			if ev.send("rows", `{"step":[],"loss":[],"test_loss":[],"lr":[],"tokens_per_s":[]}`) != nil {
				return
			}
			sent, lastWrite = true, time.Now()
		}
		if time.Since(lastWrite) > heartbeat {
			if ev.comment("keep-alive") != nil {
				return
			}
			lastWrite = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// sendError ends a stream with an "error" event: {"error": its line}.
func sendError(ev *eventStream, err error) {
	b, _ := json.Marshal(map[string]string{"error": oneLine(err.Error())})
	ev.send("error", string(b))
}

// sendColumns sends the rows of cols in events of at most liveChunk rows;
// sent says whether any event went, gone whether the page went away.
func sendColumns(ev *eventStream, cols columns) (sent, gone bool) {
	for i := 0; i < cols.len(); i += liveChunk {
		b, _ := json.Marshal(cols.slice(i, min(i+liveChunk, cols.len())))
		if ev.send("rows", string(b)) != nil {
			return sent, true
		}
		sent = true
	}
	return sent, false
}

// sendAppended sends the rows train appended to the metrics file mf since
// t's last look, after a "reset" if the file was rewritten under a page
// that has rows (sent). last is when rows were last sent (zero if none
// were), gone whether the page went away, err the file's being unreadable.
func sendAppended(ev *eventStream, t *metricsTail, mf *os.File, info os.FileInfo, sent bool) (last time.Time, gone bool, err error) {
	for more := true; more && err == nil; {
		var rows []row
		var reset bool
		rows, reset, more, err = t.read(mf, info)
		if reset && sent {
			if ev.send("reset", "{}") != nil {
				return last, true, nil
			}
		}
		if err == nil && len(rows) > 0 {
			b, _ := json.Marshal(toColumns(rows))
			if ev.send("rows", string(b)) != nil {
				return last, true, nil
			}
			sent, last = true, time.Now()
		}
	}
	return last, false, err
}

// eventStream writes Server-Sent Events.
type eventStream struct {
	w http.ResponseWriter
	f http.Flusher
}

func newEventStream(w http.ResponseWriter) (*eventStream, bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	return &eventStream{w, fl}, true
}

// send writes one event; data must hold no newline (JSON from Marshal).
func (e *eventStream) send(event, data string) error {
	return e.write("event: " + event + "\ndata: " + data + "\n\n")
}

func (e *eventStream) comment(text string) error {
	return e.write(": " + text + "\n\n")
}

// write sends text at once, within writeTimeout: a client that does not
// read is dropped (the error ends the handler) instead of holding the
// server's memory.
func (e *eventStream) write(text string) error {
	rc := http.NewResponseController(e.w)
	setWriteDeadline(e.w)
	if _, err := io.WriteString(e.w, text); err != nil {
		return err
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// Loopback reports whether addr (host:port) is on a loopback interface,
// where the server may stay strict about the Host header.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
