package serve

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
)

// modelCache keeps loaded models and their samplers for the requests that
// run a model. A model file is loaded once per version (train replaces it
// at each evaluation) and shared; a sampler (its compiled graphs) serves
// one request at a time and is kept for the next. What they take is
// estimated (the tensors, config.Model.ForwardMemory for the graphs) and
// held under a budget: the least recently used idle samplers and models
// are dropped to make room.
type modelCache struct {
	budget  int64
	open    func(string) (*savedmodel.Model, error)
	backend graph.Backend

	mu      sync.Mutex
	used    int64
	clock   int64
	entries map[string]*modelEntry // by path and version
}

type modelEntry struct {
	id       string // path and version
	path     string
	ready    chan struct{} // closed once loaded (or failed)
	model    *savedmodel.Model
	err      error
	weights  int64 // bytes of the tensors
	perGraph int64 // bytes of one sampler's graphs
	idle     []*sample.Sampler
	busy     int   // samplers out
	stale    bool  // a newer version of the file was loaded
	lastUse  int64 // c.clock at the last use
}

func newModelCache(budget int64, open func(string) (*savedmodel.Model, error), be graph.Backend) *modelCache {
	return &modelCache{budget: budget, open: open, backend: be, entries: map[string]*modelEntry{}}
}

// sampler returns a sampler of the model file at path (version key) for
// the caller's sole use; release gives it back.
func (c *modelCache) sampler(path string, key fileKey) (*sample.Sampler, func(), error) {
	id := fmt.Sprintf("%s\x00%d\x00%d\x00%d", path, key.size, key.mtime, key.ino)
	c.mu.Lock()
	e := c.entries[id]
	if e == nil {
		for _, old := range c.entries {
			if old.path == path {
				old.stale = true
				if old.busy == 0 {
					c.dropLocked(old)
				}
			}
		}
		e = &modelEntry{id: id, path: path, ready: make(chan struct{})}
		c.entries[id] = e
		c.mu.Unlock()
		m, err := c.open(path) // slow: without the lock
		if err != nil {
			// The request is fine; the run's model cannot be run (damaged,
			// too large, a translation model): 422, not a server fault.
			err = &requestError{http.StatusUnprocessableEntity, oneLine(err.Error())}
		}
		c.mu.Lock()
		if err == nil {
			err = c.admitLocked(e, m)
		}
		if err != nil {
			e.err = err
			delete(c.entries, id) // a file that failed may be fixed: try again next time
		}
		close(e.ready)
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
	if err := c.makeRoomLocked(e.perGraph, e); err != nil {
		e.busy--
		return nil, nil, err
	}
	c.used += e.perGraph
	c.mu.Unlock() // building the graphs takes a while
	s, err := sample.New(e.model, c.backend)
	c.mu.Lock()
	if err != nil {
		c.used -= e.perGraph
		e.busy--
		return nil, nil, err
	}
	return s, func() { c.release(e, s) }, nil
}

// admitLocked accounts for a loaded model, refusing one larger than the
// whole budget and making room for it.
func (c *modelCache) admitLocked(e *modelEntry, m *savedmodel.Model) error {
	for _, t := range m.Tensors {
		e.weights += int64(4*len(t.F32) + 8*len(t.F64))
	}
	e.perGraph = int64(samplerMemory(m.Spec))
	if total := e.weights + e.perGraph; total > c.budget {
		return &requestError{http.StatusInsufficientStorage, fmt.Sprintf("this model needs about %s to run, more than the server's model memory (%s; raise --model-memory)",
			config.FormatBytes(float64(total)), config.FormatBytes(float64(c.budget)))}
	}
	if err := c.makeRoomLocked(e.weights+e.perGraph, e); err != nil {
		return err
	}
	c.used += e.weights
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

// makeRoomLocked drops idle samplers and unused models, least recently
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
			c.used -= lru.perGraph
			continue
		}
		c.dropLocked(lru)
	}
	return nil
}

// dropLocked forgets an entry that has no sampler out.
func (c *modelCache) dropLocked(e *modelEntry) {
	for _, s := range e.idle {
		s.Close()
		c.used -= e.perGraph
	}
	e.idle = nil
	if c.entries[e.id] == e && e.model != nil {
		c.used -= e.weights
	}
	delete(c.entries, e.id)
}

// release gives a sampler back: kept for the next request, unless its
// model file has a newer version by now.
func (c *modelCache) release(e *modelEntry, s *sample.Sampler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.busy--
	if !e.stale && c.entries[e.id] == e {
		e.idle = append(e.idle, s)
		return
	}
	s.Close()
	c.used -= e.perGraph
	if e.busy == 0 {
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
