package translate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"unicode/utf8"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/pairs"
)

// Translator decodes sentences with a Model: the encoder runs once per
// sentence, then the decoder once per target word over every beam at once.
// By default the decoder is the step graph (graph.TranslationStep): the
// encoder also gives the cross-attention keys and values of its output,
// and each word costs the decoder one position, its self-attention keys
// and values cached. With Recompute it is the whole decoder graph, rerun
// over every word so far for each new one: the same translations (a
// test), for comparison. Graphs are static, so one is built per source
// length (and number of rows) the first time it is needed and kept.
type Translator struct {
	*Model
	Backend graph.Backend
	// Recompute decodes without the cache.
	Recompute bool
	// Check, when set, is called with a source length (in positions, EOS
	// included) before the graphs for it are built; its error refuses the
	// sentence. A model of sinusoidal positions reads a sentence of any
	// length, and an encoder's attention maps grow as its square: gptg
	// checks the memory they take against its limits.
	Check     func(srcLen int) error
	crossBufs [][]float64                             // decoding's float64 copies of the cross-attention keys and values
	enc       map[[2]int]*tape.TranslationProgram     // by (rows, source length S)
	dec       map[[2]int]*tape.TranslationProgram     // by (rows, S): beams, or sentences
	step      map[[2]int]*tape.TranslationStepProgram // by (rows, S)
}

// NewTranslator prepares m for decoding.
func NewTranslator(m *Model, be graph.Backend) *Translator {
	return &Translator{Model: m, Backend: be,
		enc: map[[2]int]*tape.TranslationProgram{}, dec: map[[2]int]*tape.TranslationProgram{},
		step: map[[2]int]*tape.TranslationStepProgram{}}
}

// Options of one translation.
type Options struct {
	// Beam is the number of hypotheses kept at each step; 1 is greedy.
	Beam int
	// Alpha is the length penalty's exponent (Wu et al. 2016, which the
	// paper's beam search uses with α = 0.6): a finished hypothesis scores
	// log p / ((5 + length)/6)^α; 0 ranks by log p alone.
	Alpha float64
	// Word, when set, is called with each word of a greedy translation
	// (Beam 1) as the decoder writes it (a beam search knows its words at
	// its end); an error it returns stops the translation with that error.
	Word func(word string) error
	// Context, when set, stops the translation between words once done.
	Context context.Context
	// MaxWords, when > 0, stops a translation after so many words (EOS
	// not counted), below the longest the model's positions allow.
	MaxWords int
}

// Result is one translation.
type Result struct {
	Source  []string // the source words as the model read them (<unk> for unknown ones)
	Words   []string // the translation's words, without EOS
	IDs     []int    // the translation's target ids, without EOS
	Text    string   // the words joined back into a sentence
	LogProb float64  // log p of the words and EOS under the model
}

// ErrInput marks a sentence the model cannot translate (no words, or more
// than its positions hold): the caller's input, not a failure.
var ErrInput = errors.New("cannot translate")

// checkUTF8 refuses text that is not UTF-8 as an ErrInput naming the
// first bad byte: what names the text (sentence, target).
func checkUTF8(what, text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	at := 0
	for at < len(text) {
		r, n := utf8.DecodeRuneInString(text[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return fmt.Errorf("%w: the %s is not valid UTF-8 (byte 0x%02x at offset %d)", ErrInput, what, text[at], at)
}

// SourceIDs turns a sentence into the encoder's ids (its words, EOS),
// refusing one the model cannot read.
func (tr *Translator) SourceIDs(text string) ([]int, error) {
	// Invalid bytes would each read as U+FFFD, an unknown word, without a
	// sign: as the pairs corpus, a sentence is UTF-8 text.
	if err := checkUTF8("sentence", text); err != nil {
		return nil, err
	}
	words := pairs.Tokenize(text)
	if len(words) == 0 {
		return nil, fmt.Errorf("%w: the sentence has no words", ErrInput)
	}
	src := append(tr.Src.Encode(words), pairs.EOS)
	if tr.Spec.Positions == "learned" && len(src) > tr.Spec.MaxLen {
		return nil, fmt.Errorf("%w: the sentence has %d words; this model (learned positions) reads at most %d", ErrInput, len(words), tr.Spec.MaxLen-1)
	}
	return src, nil
}

// Translate decodes one sentence.
func (tr *Translator) Translate(text string, o Options) (*Result, error) {
	src, err := tr.SourceIDs(text)
	if err != nil {
		return nil, err
	}
	beam := max(1, o.Beam)
	d, err := tr.decoding(src, 1, beam)
	if err != nil {
		return nil, err
	}
	var each func(hypothesis) error
	if o.Word != nil || o.Context != nil {
		each = func(h hypothesis) error {
			if o.Context != nil {
				if err := o.Context.Err(); err != nil {
					return err
				}
			}
			if word := tr.Tgt.Decode(h.ids[len(h.ids)-1:]); o.Word != nil && beam == 1 && len(word) == 1 {
				return o.Word(word[0]) // as Decode gives the words: EOS, PAD and SOS are none
			}
			return nil
		}
	}
	T := tr.TargetLen()
	if o.MaxWords > 0 {
		T = min(T, o.MaxWords)
	}
	hyp, err := search(d, T, tr.Spec.TgtVocab, beam, o.Alpha, each)
	if err != nil {
		return nil, err
	}
	r := &Result{LogProb: hyp.logp}
	for _, id := range src[:len(src)-1] {
		r.Source = append(r.Source, tr.Src.Words()[id])
	}
	r.IDs = hyp.ids
	if n := len(r.IDs); n > 0 && r.IDs[n-1] == pairs.EOS {
		r.IDs = r.IDs[:n-1]
	}
	r.Words = tr.Tgt.Decode(hyp.ids)
	r.Text = pairs.Detokenize(r.Words)
	return r, nil
}

// encode runs the encoder over rows sentences' ids (EOS included, PAD
// after it), rows·S ids, and returns its program, whose Memory (and,
// cached, CrossKeys and CrossValues) hold the results.
func (tr *Translator) encode(rows int, src []int) (*tape.TranslationProgram, error) {
	S := len(src) / rows
	p, ok := tr.enc[[2]int{rows, S}]
	if !ok {
		var err error
		if p, err = tr.build(rows, S, "encoder"); err != nil {
			return nil, err
		}
		tr.enc[[2]int{rows, S}] = p
	}
	if err := p.Run(src, nil, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// TargetLen is the decoder graph's length: the longest translation the
// model was trained to give, plus EOS (within learned positions).
func (m *Model) TargetLen() int {
	T := m.MaxTarget + 1
	if m.Spec.Positions == "learned" {
		T = min(T, m.Spec.MaxLen)
	}
	return T
}

// UsualSource is the source length, in positions (words and EOS), a
// model's memory is accounted for: what its learned positions hold, or the
// longest it was trained on (sinusoidal: a longer sentence is checked
// when it comes, Translator.Check).
func (m *Model) UsualSource() int {
	if m.Spec.Positions == "learned" {
		return m.Spec.MaxLen
	}
	return m.MaxSource + 1
}

// build compiles one forward graph of the model, reading its weights.
func (tr *Translator) build(batch, S int, part string) (*tape.TranslationProgram, error) {
	m, err := graph.BuildTranslation(tr.Spec, graph.TranslationOptions{
		Batch: batch, SrcLen: S, TgtLen: tr.TargetLen(), Part: part, Backend: tr.Backend,
		CrossKeys: part == "encoder" && !tr.Recompute, Weights: tr.Weights})
	if err != nil {
		return nil, err
	}
	return tape.CompileTranslation(m, false)
}

// decoding runs the encoder over src, the ids of sentences sentences of
// equal length S (EOS, PAD after), and returns the decoder ready for the
// first word of rows rows: one per sentence, or rows beams of one
// sentence.
func (tr *Translator) decoding(src []int, sentences, rows int) (decoding, error) {
	S := len(src) / sentences
	if !tr.built(sentences, rows, S) {
		if err := tr.check(S); err != nil {
			return nil, err
		}
		// Each pair of graphs holds activations for its length: one for
		// every length of a long input would add up.
		if tr.Programs()+2 > MaxPrograms {
			tr.Close()
		}
	}
	enc, err := tr.encode(sentences, src)
	if err != nil {
		return nil, err
	}
	rowsSrc := src
	if sentences != rows {
		rowsSrc = make([]int, 0, rows*len(src))
		for range rows {
			rowsSrc = append(rowsSrc, src...)
		}
	}
	if tr.Recompute {
		return tr.recomputingDecoder(enc, rowsSrc, sentences, rows, S)
	}
	return tr.cachingDecoder(enc, rowsSrc, sentences, rows, S)
}

// recomputingDecoder readies the decoder that reruns the whole target at every
// word, its cross-attention reading the encoder output enc.
func (tr *Translator) recomputingDecoder(enc *tape.TranslationProgram, rowsSrc []int, sentences, rows, S int) (decoding, error) {
	// Each beam row reads its sentence's encoder output.
	repeat := func(x []float64) []float64 {
		if sentences == rows {
			return x
		}
		out := make([]float64, 0, rows*len(x))
		for range rows {
			out = append(out, x...)
		}
		return out
	}
	T := tr.TargetLen()
	key := [2]int{rows, S}
	p, ok := tr.dec[key]
	if !ok {
		var err error
		if p, err = tr.build(rows, S, "decoder"); err != nil {
			return nil, err
		}
		tr.dec[key] = p
	}
	if err := p.SetMemory(repeat(graph.Float64s(enc.Memory.Value()))); err != nil {
		return nil, err
	}
	return &recomputed{p: p, src: rowsSrc, decIn: make([]int, rows*T), T: T}, nil
}

// cachingDecoder readies the decoder that feeds one word a step, with the
// encoder's keys and values computed once (enc's).
func (tr *Translator) cachingDecoder(enc *tape.TranslationProgram, rowsSrc []int, sentences, rows, S int) (decoding, error) {
	T := tr.TargetLen()
	key := [2]int{rows, S}
	p, ok := tr.step[key]
	if !ok {
		m, err := graph.BuildTranslationStep(tr.Spec, rows, S, T, tr.Backend, tr.Weights)
		if err != nil {
			return nil, err
		}
		if p, err = tape.CompileTranslationStep(m); err != nil {
			return nil, err
		}
		tr.step[key] = p
	}
	// The encoder's keys and values as float64s, once per row, in buffers
	// kept from sentence to sentence: new ones each time were garbage of
	// the cross-attention's size per sentence (per batch, for eval).
	B := len(enc.CrossKeys)
	for len(tr.crossBufs) < 2*B {
		tr.crossBufs = append(tr.crossBufs, nil)
	}
	expand := func(j int, v G.Value) []float64 {
		x := graph.Float64sInto(tr.crossBufs[j], v)
		n := len(x)
		x = slices.Grow(x, (rows/sentences-1)*n)
		for r := sentences; r < rows; r += sentences {
			x = append(x, x[:n]...)
		}
		tr.crossBufs[j] = x
		return x
	}
	var keys, values [][]float64
	for i := range B {
		keys = append(keys, expand(2*i, enc.CrossKeys[i].Value()))
		values = append(values, expand(2*i+1, enc.CrossValues[i].Value()))
	}
	if err := p.Start(rowsSrc, keys, values); err != nil {
		return nil, err
	}
	return &cached{p: p, tokens: make([]int, rows)}, nil
}

// MaxPrograms bounds the graphs a translator keeps: decoding a sentence
// of a length (and number of rows) it has no graphs for closes them all
// first when the two new ones would make more.
const MaxPrograms = 6

// built reports whether the graphs for sentences sentences of length S
// decoded over rows rows are built.
func (tr *Translator) built(sentences, rows, S int) bool {
	_, enc := tr.enc[[2]int{sentences, S}]
	_, step := tr.step[[2]int{rows, S}]
	if tr.Recompute {
		_, step = tr.dec[[2]int{rows, S}]
	}
	return enc && step
}

// decoding is the decoder's side of a search over rows hypotheses, all
// of the same length: next returns the logits (rows, V) of the word after
// each row's words. Row r's words are row parents[r]'s of the previous
// call and one more word, last[r] (parents nil: every row continues
// itself; on the first call there are no words yet).
type decoding interface {
	next(words [][]int, parents []int) ([]float64, error)
}

// cached decodes with the step graph: one position per word.
type cached struct {
	p      *tape.TranslationStepProgram
	tokens []int
	logits []float64 // reused: a new slice per word is garbage the size of the vocabulary times the rows
}

func (c *cached) next(words [][]int, parents []int) ([]float64, error) {
	if parents != nil {
		if err := c.p.Reorder(parents); err != nil {
			return nil, err
		}
	}
	for r := range c.tokens {
		c.tokens[r] = pairs.SOS
		if r < len(words) && len(words[r]) > 0 {
			c.tokens[r] = words[r][len(words[r])-1]
		}
	}
	if err := c.p.Step(c.tokens); err != nil {
		return nil, err
	}
	c.logits = graph.Float64sInto(c.logits, c.p.Logits.Value())
	return c.logits, nil
}

// recomputed decodes with the whole decoder graph, rerun over every word
// so far: each row is SOS and its words, PAD after them (the causal mask
// keeps the PAD from mattering), and the row's logits at its last
// position give the next word.
type recomputed struct {
	p     *tape.TranslationProgram
	src   []int
	decIn []int
	T, at int // the decoder's length; the position of the next word's logits
}

func (d *recomputed) next(words [][]int, _ []int) ([]float64, error) {
	rows, at := len(d.decIn)/d.T, d.at
	if at >= d.T {
		return nil, fmt.Errorf("decode: the decoder holds %d positions", d.T)
	}
	d.at++
	clear(d.decIn)
	for r := range rows {
		d.decIn[r*d.T] = pairs.SOS
		if r < len(words) {
			copy(d.decIn[r*d.T+1:], words[r])
		}
	}
	if err := d.p.Run(d.src, d.decIn, nil); err != nil {
		return nil, err
	}
	logits := graph.Float64s(d.p.Logits.Value())
	V := len(logits) / (rows * d.T)
	out := make([]float64, 0, rows*V)
	for r := range rows {
		out = append(out, logits[(r*d.T+at)*V:(r*d.T+at+1)*V]...)
	}
	return out, nil
}

// hypothesis is one partial or finished translation: its ids after SOS
// and the sum of their log-probabilities.
type hypothesis struct {
	ids    []int
	logp   float64
	done   bool // ends with EOS
	parent int  // the live hypothesis it continues
}

// score ranks finished hypotheses: log p over the length penalty
// ((5 + length)/6)^α, length counting EOS.
func (h hypothesis) score(alpha float64) float64 {
	return h.logp / math.Pow((5+float64(len(h.ids)))/6, alpha)
}

// search is beam search over the decoder (beam 1: greedy) for at most T
// words. At each step every live hypothesis is one row of the decoder's
// batch, whose logits give its next word. The best beam continuations by
// log p stay live; one that ends in EOS is finished. The search stops
// when beam hypotheses are finished or T words are written; the best
// finished one (by score) wins, or, if none finished, the best live one.
// each, if not nil, is called with the best hypothesis after every step
// (greedy's one); its error ends the search.
func search(d decoding, T, V, beam int, alpha float64, each func(hypothesis) error) (hypothesis, error) {
	live := []hypothesis{{}}
	var finished []hypothesis
	var parents []int
	logp := make([]float64, V)
	words := make([][]int, beam)
	for step := 0; step < T && len(live) > 0 && len(finished) < beam; step++ {
		for k := range words {
			words[k] = nil
			if k < len(live) {
				words[k] = live[k].ids
			}
		}
		logits, err := d.next(words, parents)
		if err != nil {
			return hypothesis{}, err
		}
		var next []hypothesis
		for k, h := range live {
			logSoftmax(logp, logits[k*V:(k+1)*V])
			for _, id := range topK(logp, beam) {
				ids := append(append([]int(nil), h.ids...), id)
				next = append(next, hypothesis{ids: ids, logp: h.logp + logp[id], done: id == pairs.EOS || step == T-1, parent: k})
			}
		}
		sort.SliceStable(next, func(i, j int) bool { return next[i].logp > next[j].logp })
		if each != nil {
			if err := each(next[0]); err != nil {
				return hypothesis{}, err
			}
		}
		live = live[:0]
		parents = make([]int, beam)
		for _, h := range next {
			if len(live)+len(finished) >= beam {
				break
			}
			if h.done {
				finished = append(finished, h)
			} else {
				parents[len(live)] = h.parent
				live = append(live, h)
			}
		}
	}
	pool := finished
	if len(pool) == 0 {
		pool = live
	}
	best := pool[0]
	for _, h := range pool[1:] {
		if h.score(alpha) > best.score(alpha) {
			best = h
		}
	}
	return best, nil
}

// GreedyBatch translates a batch of sentences at once, greedily: rows·S
// source ids (each row the sentence's ids, EOS, PAD after), as a
// pairs.Batch holds them. It returns each row's translation ids, without
// EOS.
func (tr *Translator) GreedyBatch(rows int, src []int) ([][]int, error) {
	T, V := tr.TargetLen(), tr.Spec.TgtVocab
	d, err := tr.decoding(src, rows, rows)
	if err != nil {
		return nil, err
	}
	out := make([][]int, rows)
	done := make([]bool, rows)
	left := rows
	for step := 0; step < T && left > 0; step++ {
		logits, err := d.next(out, nil)
		if err != nil {
			return nil, err
		}
		for r := range rows {
			if done[r] {
				continue
			}
			id := topK(logits[r*V:(r+1)*V], 1)[0]
			if id == pairs.EOS || step == T-1 {
				done[r], left = true, left-1
				if id != pairs.EOS {
					out[r] = append(out[r], id)
				}
				continue
			}
			out[r] = append(out[r], id)
		}
	}
	return out, nil
}

// topK returns the ids of the k largest entries of logp, largest first,
// never PAD or SOS (the decoder is not to emit them).
func topK(logp []float64, k int) []int {
	var ids []int
	for id := range logp {
		if id == pairs.PAD || id == pairs.SOS {
			continue
		}
		i := sort.Search(len(ids), func(i int) bool { return logp[ids[i]] < logp[id] })
		if i < k {
			ids = append(ids, 0)
			copy(ids[i+1:], ids[i:])
			ids[i] = id
			if len(ids) > k {
				ids = ids[:k]
			}
		}
	}
	return ids
}

// logSoftmax writes log softmax(x) into dst.
func logSoftmax(dst, x []float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(v - m)
	}
	lse := m + math.Log(sum)
	for i, v := range x {
		dst[i] = v - lse
	}
}

// Programs is the number of compiled graphs the translator keeps (one
// encoder and one decoder per sentence length and number of rows met).
func (tr *Translator) Programs() int { return len(tr.enc) + len(tr.dec) + len(tr.step) }

// check asks Check about a new source length. When it refuses while the
// translator holds graphs of other lengths, those are dropped and their
// memory given back before it asks again: a sentence that fits alone is
// not refused for the cache (in a 450 MiB cgroup, line 7 of 20 would be
// refused, the earlier lines' graphs holding the room).
func (tr *Translator) check(S int) error {
	if tr.Check == nil {
		return nil
	}
	err := tr.Check(S)
	if err == nil || tr.Programs() == 0 {
		return err
	}
	tr.Close()
	tr.crossBufs = nil
	debug.FreeOSMemory()
	return tr.Check(S)
}

// Close releases the compiled graphs.
func (tr *Translator) Close() {
	for _, p := range tr.enc {
		p.Close()
	}
	for _, p := range tr.dec {
		p.Close()
	}
	for _, p := range tr.step {
		p.Close()
	}
	clear(tr.enc)
	clear(tr.dec)
	clear(tr.step)
}
