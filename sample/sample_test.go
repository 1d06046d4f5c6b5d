package sample

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/savedmodel"
)

// The tiny models (context 8, float64) are trained once, by the first
// test that needs them, into trainDir.
var (
	trainOnce                sync.Once
	trainDir                 string
	causalPath, unmaskedPath string
	trainErr                 error
)

const (
	text       = "First Citizen:\nBefore we proceed" // 32 tokens, all in the vocabulary
	contextLen = 8
	// maxPaddingDiff bounds float64 rounding between graphs of different
	// lengths, which may sum in another order.
	maxPaddingDiff = 1e-12
	// notEqualTo: logits that differ by less are taken as the same.
	notEqualTo = 1e-6
)

func TestMain(m *testing.M) {
	code := m.Run()
	if trainDir != "" {
		os.RemoveAll(trainDir)
	}
	os.Exit(code)
}

// load returns a fresh Model and Sampler for the causal or unmasked model.
func load(t *testing.T, causal bool) (*savedmodel.Model, *Sampler) {
	t.Helper()
	trainOnce.Do(func() {
		if trainDir, trainErr = os.MkdirTemp("", "gptg-sample-test-"); trainErr != nil {
			return
		}
		if causalPath, trainErr = testmodel.Train(testmodel.Config(filepath.Join(trainDir, "causal"), true, 30)); trainErr != nil {
			return
		}
		unmaskedPath, trainErr = testmodel.Train(testmodel.Config(filepath.Join(trainDir, "unmasked"), false, 30))
	})
	if trainErr != nil {
		t.Fatal(trainErr)
	}
	path := unmaskedPath
	if causal {
		path = causalPath
	}
	m, err := savedmodel.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Context != contextLen || m.Spec.Dtype != "float64" {
		t.Fatalf("tiny model has context %d, dtype %s", m.Spec.Context, m.Spec.Dtype)
	}
	s, err := New(m, graph.Backend{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return m, s
}

func encode(t *testing.T, m *savedmodel.Model, s string) []int {
	t.Helper()
	ids, err := m.Vocab.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// logitsOf runs a graph of seqLen positions built here, independently of
// the Sampler, on input (padded with token 0 to seqLen) and returns the
// logits of position row.
func logitsOf(t *testing.T, m *savedmodel.Model, seqLen int, input []int, row int) []float64 {
	t.Helper()
	g, err := graph.Build(m.Spec, graph.Options{Batch: 1, SeqLen: seqLen})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(g.Params); err != nil {
		t.Fatal(err)
	}
	p, err := tape.Compile(g, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := make([]int, seqLen)
	copy(in, input)
	if err := p.Run(in, nil); err != nil {
		t.Fatal(err)
	}
	V := m.Spec.Vocab
	return graph.Float64s(p.Logits.Value())[row*V : (row+1)*V]
}

func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestLongPromptKeepsTheLastContextTokens: a prompt longer than the
// context is fed as its last context tokens, on both kinds of model. (A
// causal model runs those context tokens alone through its cache and the
// longer prompt through the window graph: the same function, the float64
// sums in another order.)
func TestLongPromptKeepsTheLastContextTokens(t *testing.T) {
	for _, causal := range []bool{true, false} {
		m, s := load(t, causal)
		ids := encode(t, m, text)
		for _, n := range []int{contextLen + 1, 20, len(ids)} {
			long, err := s.NextLogits(ids[:n])
			if err != nil {
				t.Fatal(err)
			}
			long = append([]float64(nil), long...)
			last, err := s.NextLogits(ids[n-contextLen : n])
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(long, last); d > maxPaddingDiff {
				t.Errorf("causal=%v, %d tokens: logits differ from those of the last %d by %g", causal, n, contextLen, d)
			}
			// And the first tokens matter not at all: change them.
			changed := append([]int{}, ids[:n]...)
			for i := 0; i < n-contextLen; i++ {
				changed[i] = (changed[i] + 1) % m.Spec.Vocab
			}
			other, err := s.NextLogits(changed)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(long, other); d != 0 {
				t.Errorf("causal=%v, %d tokens: tokens before the context changed the logits by %g", causal, n, d)
			}
		}
	}
}

// TestCausalPaddingIsInvisible: the causal sampler runs every prompt
// length in one padded full-context graph; the logits at position n−1 must
// be those of a graph of exactly n positions, for prompts below and at the
// context.
func TestCausalPaddingIsInvisible(t *testing.T) {
	m, s := load(t, true)
	ids := encode(t, m, text)
	for n := 1; n <= contextLen; n++ {
		got, err := s.NextLogits(ids[:n])
		if err != nil {
			t.Fatal(err)
		}
		want := logitsOf(t, m, n, ids[:n], n-1)
		if d := maxDiff(got, want); d > maxPaddingDiff {
			t.Errorf("%d tokens: padded logits differ from a graph of %d positions by %g", n, n, d)
		}
	}
	// Padding with other tokens than 0 must not matter either.
	p, n, err := s.Forward(ids[:3])
	if err != nil || n != 3 || p.SeqLen != contextLen {
		t.Fatalf("Forward: n %d, SeqLen %d, err %v", n, p.SeqLen, err)
	}
	if _, _, err := s.Forward(ids[:5]); err != nil {
		t.Fatal(err)
	}
	if len(s.graphs) != 1 {
		t.Errorf("the causal sampler built %d window graphs, want 1 (the full context)", len(s.graphs))
	}
	padded := append(append([]int{}, ids[:3]...), 5, 9, 11, 2, 40)
	if d := maxDiff(logitsOf(t, m, contextLen, padded, 2), logitsOf(t, m, 3, ids[:3], 2)); d > maxPaddingDiff {
		t.Errorf("other padding tokens changed position 2 by %g", d)
	}
}

// TestUnmaskedUsesAGraphPerLength: an unmasked model would read padding, so
// the sampler builds one graph per prompt length (once) and its logits are
// those of that graph, not of the padded full-context graph.
func TestUnmaskedUsesAGraphPerLength(t *testing.T) {
	m, s := load(t, false)
	ids := encode(t, m, text)
	for i, n := range []int{3, 5, contextLen, 3, 5} {
		got, err := s.NextLogits(ids[:n])
		if err != nil {
			t.Fatal(err)
		}
		got = append([]float64(nil), got...)
		if d := maxDiff(got, logitsOf(t, m, n, ids[:n], n-1)); d > maxPaddingDiff {
			t.Errorf("%d tokens: logits differ from a graph of %d positions by %g", n, n, d)
		}
		if n < contextLen {
			if d := maxDiff(got, logitsOf(t, m, contextLen, ids[:n], n-1)); d < notEqualTo {
				t.Errorf("%d tokens: the padded graph gives the same logits (diff %g): the padding is not read?", n, d)
			}
		}
		// New built the context graph; 3 and 5 add one each, once.
		if want := min(i+2, 3); len(s.graphs) != want {
			t.Errorf("after %d prompts: %d graphs cached, want %d", i+1, len(s.graphs), want)
		}
	}
}

// generate returns the tokens Generate emits.
func generate(t *testing.T, s *Sampler, prompt string, o Options) []string {
	t.Helper()
	var out []string
	err := s.Generate(prompt, o, func(tok string) error {
		out = append(out, tok)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != o.Tokens {
		t.Fatalf("%d tokens emitted, want %d", len(out), o.Tokens)
	}
	return out
}

// TestGreedyPicksTheArgmax replays a greedy generation and checks every
// token against the logits; a second run gives the same text.
func TestGreedyPicksTheArgmax(t *testing.T) {
	m, s := load(t, true)
	o := Options{Tokens: 20, Temperature: 0, Seed: 1}
	toks := generate(t, s, "First", o)
	ids := encode(t, m, "First")
	for i, tok := range toks {
		logits, err := s.NextLogits(ids)
		if err != nil {
			t.Fatal(err)
		}
		best := 0
		for j, v := range logits {
			if v > logits[best] {
				best = j
			}
		}
		if got := encode(t, m, tok)[0]; got != best {
			t.Fatalf("token %d: drew %q (id %d), the argmax is id %d", i, tok, got, best)
		}
		ids = append(ids, best)
	}
	o.Seed = 99 // greedy draws nothing at random
	if again := generate(t, s, "First", o); strings.Join(again, "") != strings.Join(toks, "") {
		t.Errorf("greedy gave %q, then %q", strings.Join(toks, ""), strings.Join(again, ""))
	}
}

func TestSeeds(t *testing.T) {
	_, s := load(t, true)
	o := Options{Tokens: 40, Temperature: 1, Seed: 1}
	a := strings.Join(generate(t, s, "First", o), "")
	if b := strings.Join(generate(t, s, "First", o), ""); a != b {
		t.Errorf("seed 1 gave %q, then %q", a, b)
	}
	o.Seed = 2
	if c := strings.Join(generate(t, s, "First", o), ""); a == c {
		t.Errorf("seeds 1 and 2 both gave %q", a)
	}
}

// TestTopK1IsGreedy: keeping only the likeliest token leaves no choice,
// whatever the temperature and seed.
func TestTopK1IsGreedy(t *testing.T) {
	_, s := load(t, true)
	greedy := strings.Join(generate(t, s, "All:", Options{Tokens: 20}), "")
	for seed := uint64(0); seed < 3; seed++ {
		o := Options{Tokens: 20, Temperature: 2, TopK: 1, Seed: seed}
		if got := strings.Join(generate(t, s, "All:", o), ""); got != greedy {
			t.Errorf("top-k 1, seed %d: %q, greedy %q", seed, got, greedy)
		}
	}
}

func TestUnknownCharacters(t *testing.T) {
	_, s := load(t, true)
	err := s.Generate("Good King Xerxes €", Options{Tokens: 5}, func(string) error {
		t.Fatal("a token was emitted for a prompt that cannot be encoded")
		return nil
	})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, `"G", "K", "X", "x", "€"`) || strings.Contains(msg, "\n") {
		t.Errorf("error %q should list G, K, X, x and € once each, on one line", msg)
	}
	if err := s.Generate("", Options{Tokens: 5}, func(string) error { return nil }); err == nil {
		t.Error("an empty prompt gave no error")
	}
}

// TestDraw checks Draw's distributions on hand-made logits: tokens 0..3
// with probabilities 0.25, 0.1, 0.5, 0.15 (so the order by likelihood is
// 2, 0, 3, 1). Every case draws many times from a seeded generator: a
// token outside the kept set must never come up, and the others must come
// up about as often as their renormalised probabilities say.
func TestDraw(t *testing.T) {
	probs := []float64{0.25, 0.1, 0.5, 0.15}
	logits := make([]float64, len(probs))
	for i, p := range probs {
		logits[i] = math.Log(p) + 3 // an offset softmax must not see
	}
	for _, tc := range []struct {
		name string
		o    Options
		want []float64
	}{
		{"plain", Options{Temperature: 1}, []float64{0.25, 0.1, 0.5, 0.15}},
		{"top-p 1 keeps all", Options{Temperature: 1, TopP: 1}, []float64{0.25, 0.1, 0.5, 0.15}},
		{"top-p 0.4: the first token reaches it", Options{Temperature: 1, TopP: 0.4}, []float64{0, 0, 1, 0}},
		{"top-p 0.7: two tokens reach it", Options{Temperature: 1, TopP: 0.7}, []float64{1.0 / 3, 0, 2.0 / 3, 0}},
		{"top-p 0.85: three tokens reach it", Options{Temperature: 1, TopP: 0.85}, []float64{0.25 / 0.9, 0, 0.5 / 0.9, 0.15 / 0.9}},
		{"top-k 2", Options{Temperature: 1, TopK: 2}, []float64{1.0 / 3, 0, 2.0 / 3, 0}},
		{"top-k 3 then top-p 0.6", Options{Temperature: 1, TopK: 3, TopP: 0.6}, []float64{1.0 / 3, 0, 2.0 / 3, 0}},
		{"temperature 0.5 squares the odds", Options{Temperature: 0.5}, []float64{0.0625 / 0.345, 0.01 / 0.345, 0.25 / 0.345, 0.0225 / 0.345}},
		{"temperature 0 is the argmax", Options{Temperature: 0}, []float64{0, 0, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const draws = 20000
			rng := rand.New(rand.NewPCG(1, 2))
			counts := make([]int, len(logits))
			for range draws {
				counts[Draw(logits, tc.o, rng)]++
			}
			for i, want := range tc.want {
				got := float64(counts[i]) / draws
				// 0.015 is over 4 standard deviations of a frequency
				// estimated from 20000 draws.
				if (want == 0 && counts[i] != 0) || math.Abs(got-want) > 0.015 {
					t.Errorf("token %d drawn %.4f of the time, want %.4f (counts %v)", i, got, want, counts)
				}
			}
		})
	}
}

// TestDrawTopPTies: with two equally likely tokens, top-p 0.5 is reached by
// the first alone, the smallest set; and greedy breaks ties the same way.
// Token 0 is so unlikely that its probability is exactly 0 in float64,
// which makes the other two exactly 0.5.
func TestDrawTopPTies(t *testing.T) {
	logits := []float64{-1000, 2, 2}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		if got := Draw(logits, Options{Temperature: 1, TopP: 0.5}, rng); got != 1 {
			t.Fatalf("top-p 0.5 over two tokens of 0.5 drew %d, want 1", got)
		}
	}
	if got := Draw(logits, Options{}, rng); got != 1 {
		t.Errorf("greedy drew %d, want the first of the tied maxima, 1", got)
	}
}

// TestCacheFollowsAnySequence: the cache keeps only the prefix a new call
// shares with what it holds, so calls on unrelated, shorter or branching
// sequences still give the window graph's logits.
func TestCacheFollowsAnySequence(t *testing.T) {
	m, s := load(t, true)
	ids := encode(t, m, text)
	branch := append(append([]int{}, ids[:3]...), ids[10:14]...)
	for _, seq := range [][]int{ids[:5], ids[:6], ids[:2], branch, ids[:contextLen], ids[4:9], ids[:1], ids[:4]} {
		got, err := s.NextLogits(seq)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(got, logitsOf(t, m, contextLen, seq, len(seq)-1)); d > maxPaddingDiff {
			t.Errorf("%v: cached logits differ from the window graph's by %g", seq, d)
		}
	}
}

var (
	float32Once sync.Once
	float32Path string
	float32Err  error
)

// TestCachedDrawsMatchWindow: sampling through the cache draws the same
// tokens as sampling through the window graph alone. The logits of the two
// differ in their last bits (the sums run in another order), which could
// change a draw only if the uniform number fell within ~1e-7 (float32) of
// a boundary between two tokens' cumulative probabilities; on these runs it
// never does. Checked on the float64 model (context 8: most tokens after
// the window slides) and on a float32 model of context 32 (most tokens
// through the cache), at temperature 1 and with top-k/top-p.
func TestCachedDrawsMatchWindow(t *testing.T) {
	load(t, true) // trains the models into trainDir
	float32Once.Do(func() {
		c := testmodel.Config(filepath.Join(trainDir, "float32"), true, 30)
		c.Model.Context, c.Model.Dtype = 32, "float32"
		float32Path, float32Err = testmodel.Train(c)
	})
	if float32Err != nil {
		t.Fatal(float32Err)
	}
	for _, path := range []string{causalPath, float32Path} {
		m, err := savedmodel.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		cached, err := New(m, graph.Backend{})
		if err != nil {
			t.Fatal(err)
		}
		window, err := New(m, graph.Backend{})
		if err != nil {
			t.Fatal(err)
		}
		window.cache.Close()
		window.cache = nil
		for seed := uint64(1); seed <= 3; seed++ {
			for _, o := range []Options{
				{Tokens: 60, Temperature: 1, Seed: seed},
				{Tokens: 60, Temperature: 0.8, TopK: 10, TopP: 0.9, Seed: seed},
			} {
				a := strings.Join(generate(t, cached, "First", o), "")
				b := strings.Join(generate(t, window, "First", o), "")
				if a != b {
					t.Errorf("%s, %+v: through the cache %q, window graph alone %q", m.Spec.Dtype, o, a, b)
				}
			}
		}
		if cached.cache.Len() == 0 {
			t.Errorf("%s: the cache was never used", m.Spec.Dtype)
		}
		cached.Close()
		window.Close()
	}
}

// TestSharedWeightsUnchanged: every graph of a sampler runs on the model's
// own tensors (savedmodel.SharedWeights), so none may write into them:
// after sampling through the prefill, the cache, the window graph past the
// context and the attention maps, with the fused kernels and with
// Gorgonia's primitives, the tensors hold the file's bits.
func TestSharedWeightsUnchanged(t *testing.T) {
	load(t, true)
	for _, be := range []graph.Backend{{}, {Unfused: true}} {
		m, err := savedmodel.Load(causalPath)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string][]float64{}
		for name, x := range m.Tensors {
			before[name] = append([]float64(nil), x.F64...)
		}
		s, err := New(m, be)
		if err != nil {
			t.Fatal(err)
		}
		generate(t, s, "First Citizen", Options{Tokens: 3 * contextLen, Temperature: 1, Seed: 1})
		if _, err := s.Attention(encode(t, m, "First")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		for name, x := range m.Tensors {
			for i, v := range x.F64 {
				if math.Float64bits(v) != math.Float64bits(before[name][i]) {
					t.Fatalf("unfused %v: tensor %s entry %d changed from %v to %v", be.Unfused, name, i, before[name][i], v)
				}
			}
		}
	}
}

// TestPrefillFillsTheCache: a prompt goes through one run of a window
// graph (tape.Prefill), whose keys and values the cache takes over; the
// logits of that run and of every token appended after it are the window
// graph's.
func TestPrefillFillsTheCache(t *testing.T) {
	m, s := load(t, true)
	ids := encode(t, m, text)
	for _, n := range []int{2, 5, contextLen} {
		s.cache.Truncate(0)
		got, err := s.NextLogits(ids[:n])
		if err != nil {
			t.Fatal(err)
		}
		if s.prefill == nil || s.prefill.SeqLen != n || s.cache.Len() != n {
			t.Fatalf("%d tokens: no prefill of %d positions filled the cache (cache %d)", n, n, s.cache.Len())
		}
		if d := maxDiff(got, logitsOf(t, m, n, ids[:n], n-1)); d > maxPaddingDiff {
			t.Errorf("%d tokens: prefill logits differ from the window graph's by %g", n, d)
		}
		for k := n + 1; k <= min(n+3, contextLen); k++ {
			got, err := s.NextLogits(ids[:k])
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(got, logitsOf(t, m, k, ids[:k], k-1)); d > maxPaddingDiff {
				t.Errorf("%d tokens after a prefill of %d: logits differ from the window graph's by %g", k, n, d)
			}
		}
	}
}

// TestByLogitOrder: the order Draw walks, by radix sort for a large
// vocabulary and by comparisons for a small one, is the stable sort's by
// descending logit: equal logits (-0 and +0 among them) in id order.
func TestByLogitOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{3, 100, radixFrom - 1, radixFrom, 50257} {
		logits := make([]float64, n)
		for i := range logits {
			switch rng.IntN(6) {
			case 0:
				logits[i] = float64(rng.IntN(5) - 2) // ties, and zeros
			case 1:
				logits[i] = math.Copysign(0, -1)
			case 2:
				logits[i] = math.Inf(2*rng.IntN(2) - 1)
			default:
				logits[i] = float64(float32(rng.NormFloat64() * 10))
			}
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		sort.SliceStable(want, func(a, b int) bool { return logits[want[a]] > logits[want[b]] })
		got := byLogit(logits, make([]int32, n), make([]int32, n), make([]uint64, n), make([]uint64, n))
		for i := range want {
			if int(got[i]) != want[i] {
				t.Fatalf("%d logits: place %d holds id %d (logit %v), the stable sort's %d (logit %v)", n, i, got[i], logits[got[i]], want[i], logits[want[i]])
			}
		}
	}
}
