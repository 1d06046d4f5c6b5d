package serve

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/translate"
)

// modelCache keeps loaded models and their runners for the requests that
// run a model: samplers of GPT models, translators of translation models.
// A model file is loaded once per version (train replaces it at each
// evaluation) and shared; a runner (its compiled graphs) serves one
// request at a time and is kept for the next. What they take is estimated
// (the tensors; config.Model.ForwardMemory for a sampler's graphs,
// translatorMemory for a translator's) and held under a budget: the least
// recently used idle runners and models are dropped to make room.
type modelCache struct {
	budget  int64
	limit   string // what capped the budget below --model-memory ("the process may use under ulimit -v …"), or ""
	open    func(string) (*savedmodel.Model, error)
	backend graph.Backend

	mu      sync.Mutex
	used    int64
	clock   int64
	loads   int                    // model files read, for the tests
	entries map[string]*modelEntry // by kind, path and version
}

// runner is a model's compiled graphs, for one request at a time: a
// *sample.Sampler or a *translate.Translator.
type runner interface{ Close() }

// modelKind is how the cache loads one kind of model file and makes its
// runners.
type modelKind struct {
	name string
	// load reads the file and estimates the bytes of its tensors and of
	// one runner's graphs.
	load func(c *modelCache, path string) (model any, weights, perRunner int64, err error)
	// newRunner compiles a runner of a loaded model.
	newRunner func(c *modelCache, model any) (runner, error)
	// keep says whether a runner that served a request may serve the next
	// (a translator that compiled graphs for many sentence lengths is
	// dropped rather than kept over its estimate).
	keep func(runner) bool
}

var gptKind = modelKind{
	name: "gpt",
	load: func(c *modelCache, path string) (any, int64, int64, error) {
		m, err := c.open(path)
		if err != nil {
			return nil, 0, 0, err
		}
		return m, tensorBytes(m.Tensors), int64(samplerMemory(m.Spec)), nil
	},
	newRunner: func(c *modelCache, m any) (runner, error) { return sample.New(m.(*savedmodel.Model), c.backend) },
	keep:      func(runner) bool { return true },
}

var translationKind = modelKind{
	name: "translation",
	load: func(c *modelCache, path string) (any, int64, int64, error) {
		var perRunner int64
		// Checked from the file's header: a model that cannot fit is
		// refused before its tensors are read.
		m, err := translate.LoadChecked(path, func(m *translate.Model, dataBytes int64) error {
			perRunner = translatorMemory(m)
			return c.fits(dataBytes + perRunner)
		})
		if err != nil {
			return nil, 0, 0, err
		}
		return m, tensorBytes(m.Tensors), perRunner, nil
	},
	newRunner: func(c *modelCache, m any) (runner, error) {
		tm := m.(*translate.Model)
		tr := translate.NewTranslator(tm, c.backend)
		// A sentence longer than the model's usual (sinusoidal positions
		// read any length) needs more than the runner was accounted.
		tr.Check = func(S int) error {
			if S <= tm.UsualSource() {
				return nil
			}
			return &requestError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the sentence has %d words; this server translates at most %d with this model (its memory is accounted for that length)", S-1, tm.UsualSource()-1)}
		}
		return tr, nil
	},
	// A translator bounds its own graphs (translate.MaxPrograms).
	keep: func(runner) bool { return true },
}

func tensorBytes(ts map[string]modelfile.Tensor) int64 {
	var n int64
	for _, t := range ts {
		n += int64(4*len(t.F32) + 8*len(t.F64))
	}
	return n
}

// translatorMemory estimates one translator's graphs (their activations:
// the graphs read the model's tensors, counted as its weights): up to
// translate.MaxPrograms kept encoders and decoder steps for maxBeam rows,
// and the whole-model graph of an attention request, over the longest
// source and translation (config.TranslationMemory).
func translatorMemory(m *translate.Model) int64 {
	T := m.TargetLen()
	e := m.Config.TranslationMemory(m.Src.Size(), m.Tgt.Size(), 0, config.TranslationGraphs{
		SrcLen: m.UsualSource(), TgtLen: T,
		Decoders: translate.MaxPrograms / 2, DecodeRows: maxBeam, Wholes: 1, WholeBatch: 1})
	return int64(e.Activations)
}

type modelEntry struct {
	id        string // kind, path and version
	path      string
	kind      *modelKind
	ready     chan struct{} // closed once loaded (or failed)
	model     any
	err       error
	weights   int64 // bytes of the tensors
	counted   bool  // weights are in c.used (until dropLocked takes them out)
	perRunner int64 // bytes of one runner's graphs
	idle      []runner
	busy      int   // runners out
	stale     bool  // a newer version of the file was loaded
	lastUse   int64 // c.clock at the last use
}

func newModelCache(budget int64, limit string, open func(string) (*savedmodel.Model, error), be graph.Backend) *modelCache {
	return &modelCache{budget: budget, limit: limit, open: open, backend: be, entries: map[string]*modelEntry{}}
}

// TooLarge marks an OpenModel error that says the model needs more memory
// than the process may take: the answer is 507, as for a model over the
// server's model memory, not 422 (a damaged model).
func TooLarge(err error) error { return tooLarge{err} }

type tooLarge struct{ error }

func (e tooLarge) Unwrap() error { return e.error }

// sampler returns a sampler of the GPT model file at path (version key)
// for the caller's sole use; release gives it back.
func (c *modelCache) sampler(path string, key fileKey) (*sample.Sampler, func(), error) {
	r, release, err := c.runner(&gptKind, path, key)
	if err != nil {
		return nil, nil, err
	}
	return r.(*sample.Sampler), release, nil
}

// translator is sampler's twin for a translation model file.
func (c *modelCache) translator(path string, key fileKey) (*translate.Translator, func(), error) {
	r, release, err := c.runner(&translationKind, path, key)
	if err != nil {
		return nil, nil, err
	}
	return r.(*translate.Translator), release, nil
}

// runner returns a runner of the model file at path (version key), of
// kind k, for the caller's sole use; release gives it back.
func (c *modelCache) runner(k *modelKind, path string, key fileKey) (runner, func(), error) {
	id := fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%d", k.name, path, key.size, key.mtime, key.ino)
	c.mu.Lock()
	e := c.entries[id]
	if e == nil {
		e = c.loadLocked(k, id, path)
	} else {
		c.mu.Unlock()
		<-e.ready
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	if e.err != nil {
		return nil, nil, e.err
	}
	c.clock++
	e.lastUse = c.clock
	e.busy++
	if n := len(e.idle); n > 0 {
		s := e.idle[n-1]
		e.idle = e.idle[:n-1]
		return s, func() { c.release(e, s) }, nil
	}
	if err := c.makeRoomLocked(e.perRunner, e); err != nil {
		e.busy--
		return nil, nil, err
	}
	c.used += e.perRunner
	c.mu.Unlock() // building the graphs takes a while
	s, err := k.newRunner(c, e.model)
	c.mu.Lock()
	if err != nil {
		c.used -= e.perRunner
		e.busy--
		return nil, nil, err
	}
	return s, func() { c.release(e, s) }, nil
}

// loadLocked loads the model file at path (entry id) for runner, marking
// the entries of the file's older versions stale. It is called with c.mu
// held and returns with it held, but loads without it: other models serve
// meanwhile, and callers of the same id wait on the entry's ready.
func (c *modelCache) loadLocked(k *modelKind, id, path string) *modelEntry {
	for _, old := range c.entries {
		if old.path == path {
			old.stale = true
			if old.busy == 0 {
				c.dropLocked(old)
			}
		}
	}
	e := &modelEntry{id: id, path: path, kind: k, ready: make(chan struct{})}
	c.entries[id] = e
	c.loads++
	c.mu.Unlock()
	m, weights, perRunner, err := k.load(c, path) // slow: without the lock
	var tl tooLarge
	if errors.As(err, &tl) && c.dropUnused(e) {
		// Too large for what the process may still take while the
		// models nobody is using are held: they are dropped, their
		// memory collected (it is reused, without new address space:
		// memlimit counts the idle heap), and the model tried again.
		debug.FreeOSMemory()
		m, weights, perRunner, err = k.load(c, path)
	}
	var re *requestError
	switch {
	case errors.As(err, &re): // 507: the model does not fit
		err = re
	case errors.As(err, &tl):
		err = &requestError{http.StatusInsufficientStorage, oneLine(err.Error())}
	case err != nil:
		// The request is fine; the run's model cannot be run (damaged,
		// too large): 422, not a server fault.
		err = &requestError{http.StatusUnprocessableEntity, oneLine(err.Error())}
	}
	c.mu.Lock()
	if err == nil {
		e.weights, e.perRunner = weights, perRunner
		err = c.admitLocked(e, m)
	}
	if err != nil {
		e.err = err
		if c.entries[id] == e {
			delete(c.entries, id) // a file that failed may be fixed: try again next time
		}
	}
	close(e.ready)
	return e
}

// fits refuses a model that needs more than the whole budget (507).
func (c *modelCache) fits(need int64) error {
	if need <= c.budget {
		return nil
	}
	raise := "raise --model-memory"
	if c.limit != "" {
		raise = "all that " + c.limit
	}
	return &requestError{http.StatusInsufficientStorage, fmt.Sprintf("this model needs about %s to run, more than the server's model memory (%s; %s)",
		config.FormatBytes(float64(need)), config.FormatBytes(float64(c.budget)), raise)}
}

// admitLocked accounts for a loaded model, refusing one larger than the
// whole budget and making room for it.
func (c *modelCache) admitLocked(e *modelEntry, m any) error {
	if err := c.fits(e.weights + e.perRunner); err != nil {
		return err
	}
	if err := c.makeRoomLocked(e.weights+e.perRunner, e); err != nil {
		return err
	}
	// Counted even when a newer version of the file dropped e while it
	// loaded: its requests still hold the model, and the last of them
	// to finish takes its weights out again (release, dropLocked).
	c.used += e.weights
	e.counted = true
	e.model = m
	return nil
}

// samplerMemory estimates one sampler's graphs: sample.New builds the
// full-context graph and, for a causal model, the incremental one; an
// unmasked model builds one graph per prompt length it is given.
func samplerMemory(spec config.Model) float64 {
	graphs := 2
	if !spec.Mask {
		graphs = spec.Context
	}
	return spec.ForwardMemory(1, spec.Context, graphs).Total()
}

// makeRoomLocked drops idle runners and unused models, least recently
// used first, until need more bytes fit the budget. keep is the model
// being used, whose weights stay.
func (c *modelCache) makeRoomLocked(need int64, keep *modelEntry) error {
	for c.used+need > c.budget {
		var lru *modelEntry
		for _, e := range c.entries {
			droppable := len(e.idle) > 0 || (e.busy == 0 && e != keep && e.model != nil)
			if droppable && (lru == nil || e.lastUse < lru.lastUse) {
				lru = e
			}
		}
		if lru == nil {
			return &requestError{http.StatusServiceUnavailable, fmt.Sprintf("busy: the models in use fill the server's model memory (%s); try again when a generation ends",
				config.FormatBytes(float64(c.budget)))}
		}
		if n := len(lru.idle); n > 0 {
			lru.idle[n-1].Close()
			lru.idle = lru.idle[:n-1]
			c.used -= lru.perRunner
			continue
		}
		c.dropLocked(lru)
	}
	return nil
}

// dropLocked forgets an entry that has no runner out.
// dropUnused drops every loaded model but keep that no request is using,
// and says whether there was one.
func (c *modelCache) dropUnused(keep *modelEntry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dropped := false
	for _, e := range c.entries {
		if e != keep && e.busy == 0 && e.model != nil {
			c.dropLocked(e)
			dropped = true
		}
	}
	return dropped
}

func (c *modelCache) dropLocked(e *modelEntry) {
	for _, s := range e.idle {
		s.Close()
		c.used -= e.perRunner
	}
	e.idle = nil
	if e.counted {
		c.used -= e.weights
		e.counted = false
	}
	if c.entries[e.id] == e {
		delete(c.entries, e.id)
	}
}

// release gives a runner back: kept for the next request, unless its
// model file has a newer version by now (or it grew past its estimate).
func (c *modelCache) release(e *modelEntry, s runner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.busy--
	if !e.stale && c.entries[e.id] == e && e.kind.keep(s) {
		e.idle = append(e.idle, s)
		return
	}
	s.Close()
	c.used -= e.perRunner
	if e.busy == 0 && (e.stale || c.entries[e.id] != e) {
		c.dropLocked(e)
	}
}

// usage is the bytes held and the models loaded.
func (c *modelCache) usage() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.entries)
}

func (c *modelCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		for _, s := range e.idle {
			s.Close()
		}
		e.idle = nil
	}
	c.entries = map[string]*modelEntry{}
	c.used = 0
}
