// Package sample generates text from a saved model, one token at a time, the
// way the seed's generate() does: feed the last context tokens, take the
// logits of the last position, draw the next token.
package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gptg/gptg/graph"
)

// Options control the drawing.
type Options struct {
	Tokens      int     // how many tokens to generate
	Temperature float64 // 0 = greedy (always the most likely token)
	TopK        int     // keep only the K most likely tokens; 0 = all
	TopP        float64 // keep the smallest set with probability ≥ P; 0 or 1 = all
	Seed        uint64
}

// Sampler runs batch-1 graphs of one model. A causal model needs one graph
// of the full context: a shorter prompt is right-padded and position n−1
// cannot see the padding. An unmasked model would read the padding, so it
// gets a graph per prompt length, each built once.
type Sampler struct {
	Model   *graph.SavedModel
	backend graph.Backend
	graphs  map[int]*graph.Program
}

// New prepares a sampler for a loaded model file.
func New(m *graph.SavedModel, be graph.Backend) (*Sampler, error) {
	s := &Sampler{Model: m, backend: be, graphs: map[int]*graph.Program{}}
	if _, err := s.program(m.Spec.Context); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the graphs.
func (s *Sampler) Close() {
	for _, p := range s.graphs {
		p.Close()
	}
}

// program returns the graph for sequences of n positions, building it once.
func (s *Sampler) program(n int) (*graph.Program, error) {
	if s.Model.Spec.Mask {
		n = s.Model.Spec.Context
	}
	if p, ok := s.graphs[n]; ok {
		return p, nil
	}
	m, err := graph.Build(s.Model.Spec, graph.Options{Batch: 1, SeqLen: n, Backend: s.backend})
	if err != nil {
		// The spec came from the file's metadata: say which file is wrong.
		return nil, fmt.Errorf("%s: %w", s.Model.Path, err)
	}
	if err := s.Model.Apply(m.Params); err != nil {
		return nil, err
	}
	p, err := graph.Compile(m, false)
	if err != nil {
		return nil, err
	}
	s.graphs[n] = p
	return p, nil
}

// Forward runs the model on ids (at most the context; the caller keeps the
// last ones) and returns the graph that ran and the number of positions
// used. The logits of the last position are row n−1 of p.Logits.
func (s *Sampler) Forward(ids []int) (p *graph.Program, n int, err error) {
	n = len(ids)
	if n == 0 || n > s.Model.Spec.Context {
		return nil, 0, fmt.Errorf("forward: %d tokens, want 1..%d", n, s.Model.Spec.Context)
	}
	if p, err = s.program(n); err != nil {
		return nil, 0, err
	}
	in := make([]int, p.SeqLen)
	copy(in, ids) // the rest is padding (token 0) that a causal model cannot see
	if err := p.Run(in, nil); err != nil {
		return nil, 0, err
	}
	return p, n, nil
}

// NextLogits returns the logits (float64) the model gives for the token
// after ids, feeding only the last context tokens of ids.
func (s *Sampler) NextLogits(ids []int) ([]float64, error) {
	if T := s.Model.Spec.Context; len(ids) > T {
		ids = ids[len(ids)-T:]
	}
	p, n, err := s.Forward(ids)
	if err != nil {
		return nil, err
	}
	V := s.Model.Spec.Vocab
	all := graph.Float64s(p.Logits.Value())
	return all[(n-1)*V : n*V], nil
}

// Generate encodes prompt, then draws o.Tokens tokens, passing each one's
// text to emit as soon as it is drawn.
func (s *Sampler) Generate(prompt string, o Options, emit func(string) error) error {
	if prompt == "" {
		return errors.New("the prompt is empty: give at least one token")
	}
	ids, err := s.Model.Vocab.Encode(prompt)
	if err != nil {
		return fmt.Errorf("the prompt has %w", err)
	}
	if len(ids) == 0 {
		return errors.New("the prompt has no tokens")
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	for i := 0; i < o.Tokens; i++ {
		logits, err := s.NextLogits(ids)
		if err != nil {
			return err
		}
		next := Draw(logits, o, rng)
		ids = append(ids, next)
		text := s.Model.Vocab.Decode([]int{next})
		if s.Model.Vocab.Kind() == "word" {
			text = " " + text
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
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
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
			return idx[i]
		}
	}
	return idx[len(idx)-1]
}
