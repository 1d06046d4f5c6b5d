// Package sample generates text from a saved model, one token at a time, the
// way the seed's generate() does: feed the last context tokens, take the
// logits of the last position, draw the next token.
package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/savedmodel"
)

// Options control the drawing.
type Options struct {
	Tokens      int     // how many tokens to generate
	Temperature float64 // 0 = greedy (always the most likely token)
	TopK        int     // keep only the K most likely tokens; 0 = all
	TopP        float64 // keep the smallest set with probability ≥ P; 0 or 1 = all
	Seed        uint64
}

// Sampler runs batch-1 graphs of one model.
//
// A causal model keeps a key/value cache (tape.CachedProgram): while the
// tokens fit the context, they sit at positions 0, 1, 2, … and nothing
// computed for a position depends on later tokens, so each new token is
// one run of the cached graph over one position, against the keys
// and values of the earlier ones. A prompt (or any run of new tokens long
// enough) fills the cache in one run of a window graph over all its
// positions instead (tape.Prefill): matrix products over the whole prompt
// where one run per token would read every weight once per token — for
// GPT-2 124M and a 512-token prompt, 1.6 s on one thread instead of 14.
//
// Once the tokens outgrow the context the model sees the last context
// tokens at positions 0..context−1, as the reference does: every token
// moves to another position, so every cached key and value of every block
// changes (the position is added at the input), and would change again
// at the next token. A rebuilt cache would be read once, so the cheapest
// correct way is no cache: one run of the window graph per token.
//
// The window graph of a causal model is the full context: a shorter
// prompt is right-padded and position n−1 cannot see the padding. An
// unmasked model would read the padding, and has no valid cache: it gets
// a window graph per prompt length, each built once.
//
// Every graph takes its weights from the model's tensors themselves
// (savedmodel.SharedWeights): one copy of the weights however many graphs
// run, and each built only when first needed.
type Sampler struct {
	Model   *savedmodel.Model
	backend graph.Backend
	graphs  map[int]*tape.Program // Forward's, attention weights kept
	window  *tape.Program         // a causal model's past the context: logits alone
	cache   *tape.CachedProgram   // nil for an unmasked model
	prefill *tape.Prefill         // the last prompt length's, kept for the next sample
	logits  []float64             // NextLogits's result, reused
}

// New prepares a sampler for a loaded model file. The graph it builds
// first (the cached graph of a causal model, the full window of another)
// checks the file's tensors against the model.
func New(m *savedmodel.Model, be graph.Backend) (*Sampler, error) {
	s := &Sampler{Model: m, backend: be, graphs: map[int]*tape.Program{}}
	var err error
	if m.Spec.Mask {
		err = s.buildCache()
	} else {
		_, err = s.program(m.Spec.Context)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// buildCache compiles the cached graph of a causal model.
func (s *Sampler) buildCache() error {
	im, err := graph.BuildCachedWith(s.Model.Spec, s.backend, s.Model.SharedWeights())
	if err != nil {
		return fmt.Errorf("%s: %w", s.Model.Path, err)
	}
	if err := s.Model.CheckShared(im.Params); err != nil {
		return err
	}
	s.cache, err = tape.CompileCached(im)
	return err
}

// Close releases the graphs.
func (s *Sampler) Close() {
	for _, p := range s.graphs {
		p.Close()
	}
	if s.window != nil {
		s.window.Close()
	}
	if s.cache != nil {
		s.cache.Close()
	}
	if s.prefill != nil {
		s.prefill.Close()
	}
}

// build builds the window graph of n positions on the model's weights.
func (s *Sampler) build(n int) (*graph.Model, error) {
	m, err := graph.Build(s.Model.Spec, graph.Options{Batch: 1, SeqLen: n, Backend: s.backend, Weights: s.Model.SharedWeights()})
	if err != nil {
		// The spec came from the file's metadata: say which file is wrong.
		return nil, fmt.Errorf("%s: %w", s.Model.Path, err)
	}
	if err := s.Model.CheckShared(m.Params); err != nil {
		return nil, err
	}
	return m, nil
}

// program returns the graph for sequences of n positions, building it once.
func (s *Sampler) program(n int) (*tape.Program, error) {
	if s.Model.Spec.Mask {
		n = s.Model.Spec.Context
	}
	if p, ok := s.graphs[n]; ok {
		return p, nil
	}
	m, err := s.build(n)
	if err != nil {
		return nil, err
	}
	p, err := tape.Compile(m, false)
	if err != nil {
		return nil, err
	}
	s.graphs[n] = p
	return p, nil
}

// Forward runs the model on ids (at most the context; the caller keeps the
// last ones) and returns the graph that ran and the number of positions
// used. The logits of the last position are row n−1 of p.Logits.
func (s *Sampler) Forward(ids []int) (p *tape.Program, n int, err error) {
	n = len(ids)
	if n == 0 || n > s.Model.Spec.Context {
		return nil, 0, fmt.Errorf("forward: %d tokens, want 1..%d", n, s.Model.Spec.Context)
	}
	if p, err = s.program(n); err != nil {
		return nil, 0, err
	}
	if err := runPadded(p, ids); err != nil {
		return nil, 0, err
	}
	return p, n, nil
}

// runPadded runs p on ids, right-padded with token 0 to its length (the
// padding a causal model cannot see).
func runPadded(p *tape.Program, ids []int) error {
	in := make([]int, p.SeqLen)
	copy(in, ids)
	return p.Run(in, nil)
}

// NextLogits returns the logits (float64) the model gives for the token
// after ids, feeding only the last context tokens of ids. The slice is
// reused by the next call.
func (s *Sampler) NextLogits(ids []int) ([]float64, error) {
	T := s.Model.Spec.Context
	if s.cache != nil && len(ids) > 0 && len(ids) <= T {
		return s.cachedLogits(ids)
	}
	if len(ids) > T {
		ids = ids[len(ids)-T:]
	}
	if !s.Model.Spec.Mask {
		p, n, err := s.Forward(ids)
		if err != nil {
			return nil, err
		}
		return s.row(p.Logits.Value(), n-1), nil
	}
	// Past the context a causal model reads the logits of the last
	// position only: a program that keeps no attention weights. The
	// prompt's prefill is done with by now: one window graph at a time.
	if s.window == nil {
		s.dropPrefill()
		m, err := s.build(T)
		if err != nil {
			return nil, err
		}
		if s.window, err = tape.CompileLogits(m); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("forward: 0 tokens, want 1..%d", T)
	}
	if err := runPadded(s.window, ids); err != nil {
		return nil, err
	}
	return s.row(s.window.Logits.Value(), len(ids)-1), nil
}

// row is row i of a (rows, V) logits value, as float64s in s.logits.
func (s *Sampler) row(v G.Value, i int) []float64 {
	V := s.Model.Spec.Vocab
	switch d := v.Data().(type) {
	case []float32:
		s.logits = s.logits[:0]
		for _, x := range d[i*V : (i+1)*V] {
			s.logits = append(s.logits, float64(x))
		}
	case []float64:
		s.logits = append(s.logits[:0], d[i*V:(i+1)*V]...)
	}
	return s.logits
}

// cachedLogits runs ids (at most the context, at positions 0..n−1) through
// the cache: it keeps the longest prefix of ids it holds (in Generate, all
// but the token drawn last) and appends the rest, the last append giving
// the logits. Many new tokens (a prompt) go through a prefill instead.
func (s *Sampler) cachedLogits(ids []int) ([]float64, error) {
	c := s.cache
	keep := 0
	for keep < min(c.Len(), len(ids)-1) && c.Tokens()[keep] == ids[keep] {
		keep++
	}
	if fresh := len(ids) - keep; fresh > 1 && (keep == 0 || 8*fresh >= len(ids)) && !s.backend.Unfused && s.Model.Spec.QKV {
		return s.prefillLogits(ids)
	}
	c.Truncate(keep)
	for _, t := range ids[keep:] {
		if err := c.Append(t); err != nil {
			return nil, err
		}
	}
	return s.row(c.Logits.Value(), 0), nil
}

// dropPrefill closes the prefill graph, and collects its buffers before
// the next graph allocates its own: GPT-2 124M's sampler past a
// 1,024-token prompt peaked at 1.42 GB with the prefill's 430 MB still
// held, 1.0 GB without. Gorgonia's TapeMachine has a finalizer, so what it
// holds is freed one collection after the one that finds it unreachable,
// once the finalizer has run: two collections, the finalizers' goroutine
// let run between them.
func (s *Sampler) dropPrefill() {
	if s.prefill == nil {
		return
	}
	s.prefill.Close()
	s.prefill = nil
	runtime.GC()
	runtime.Gosched()
	runtime.GC()
}

// prefillLogits runs a window graph of exactly len(ids) positions over
// ids, fills the cache with its keys and values and returns its last
// position's logits. The graph is kept for the next prompt of that
// length (the next sample of the same prompt), and only that one.
func (s *Sampler) prefillLogits(ids []int) ([]float64, error) {
	n := len(ids)
	if s.prefill == nil || s.prefill.SeqLen != n {
		s.dropPrefill()
		m, err := s.build(n)
		if err != nil {
			return nil, err
		}
		if s.prefill, err = tape.CompilePrefill(m); err != nil {
			return nil, err
		}
	}
	if err := s.prefill.Run(ids, nil); err != nil {
		return nil, err
	}
	if err := s.cache.Load(ids, s.prefill); err != nil {
		return nil, err
	}
	return s.row(s.prefill.Logits.Value(), n-1), nil
}

// EncodePrompt turns a prompt into ids, or says in one line why it cannot
// be sampled from (empty, not UTF-8, tokens outside the vocabulary). A
// caller checks it before printing anything, so that a bad prompt is never
// echoed ahead of its error.
func EncodePrompt(v *corpus.Vocab, prompt string) ([]int, error) {
	if prompt == "" {
		return nil, errors.New("the prompt is empty: give at least one token")
	}
	ids, err := v.Encode(prompt)
	if err != nil {
		return nil, fmt.Errorf("the prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("the prompt has no tokens")
	}
	return ids, nil
}

// ErrNotFinite is Generate's error for logits that are NaN or infinite
// (weights so large that the forward pass overflows): drawing from them
// would print tokens that mean nothing.
var ErrNotFinite = errors.New("the model's logits are not finite numbers")

// Generate encodes prompt, then draws o.Tokens tokens, passing each one's
// text to emit as soon as it is drawn. A BPE token may end inside a
// character (GPT-2 spells "é" as two tokens where no merge joins its
// bytes): its bytes wait for the rest of the character, so that emit is
// only ever given whole UTF-8, and at the end what is left of a character
// is U+FFFD.
func (s *Sampler) Generate(prompt string, o Options, emit func(string) error) (err error) {
	ids, err := EncodePrompt(s.Model.Vocab, prompt)
	if err != nil {
		return err
	}
	v := s.Model.Vocab
	var pending bpe.TextBuffer
	if v.BPE() != nil {
		defer func() {
			if rest := pending.Flush(); rest != "" && err == nil {
				err = emit(rest)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	for i := 0; i < o.Tokens; i++ {
		logits, err := s.NextLogits(ids)
		if err != nil {
			return err
		}
		for _, l := range logits {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				return ErrNotFinite
			}
		}
		next := Draw(logits, o, rng)
		ids = append(ids, next)
		text := v.Decode([]int{next})
		switch {
		case v.Kind() == corpus.Word:
			text = " " + text
		case v.BPE() != nil:
			if text = pending.Write([]byte(text)); text == "" {
				continue
			}
		}
		if err := emit(text); err != nil {
			return err
		}
	}
	return nil
}

// Draw picks a token from logits: greedy at temperature 0, otherwise from
// softmax(logits / temperature) restricted by top-k and then top-p.
func Draw(logits []float64, o Options, rng *rand.Rand) int {
	if o.Temperature == 0 {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		return best
	}
	n := len(logits)
	idx := byLogit(logits, make([]int32, n), make([]int32, n), make([]uint64, n), make([]uint64, n))
	if o.TopK > 0 && o.TopK < len(idx) {
		idx = idx[:o.TopK]
	}
	maxL := logits[idx[0]]
	probs := make([]float64, len(idx))
	sum := 0.0
	for i, j := range idx {
		probs[i] = math.Exp((logits[j] - maxL) / o.Temperature)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	if o.TopP > 0 && o.TopP < 1 {
		cum := 0.0
		for i, p := range probs {
			cum += p
			if cum >= o.TopP {
				probs, idx = probs[:i+1], idx[:i+1]
				break
			}
		}
		sum = 0
		for _, p := range probs {
			sum += p
		}
		for i := range probs {
			probs[i] /= sum
		}
	}
	u := rng.Float64()
	for i, p := range probs {
		u -= p
		if u < 0 {
			return int(idx[i])
		}
	}
	return int(idx[len(idx)-1])
}
