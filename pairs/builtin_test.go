package pairs

import (
	"testing"

	"github.com/gptg/gptg/config"
)

const builtinBible = "builtin:bible-en-es"

// loadBuiltin reads the committed Bible corpus with en-es.toml's settings.
func loadBuiltin(t *testing.T, sets ...string) (*config.Config, *Corpus) {
	t.Helper()
	cfg, err := config.Load("../configs/translate/en-es.toml", append([]string{"data.path=" + builtinBible}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// TestBuiltinCorpus reads corpus/builtin/bible-en-es.tsv as en-es.toml
// does: every line a pair, none malformed, a 90/10 split with no sentence
// on both sides, and the seed's setting (8–16 source words) inside it.
func TestBuiltinCorpus(t *testing.T) {
	_, c := loadBuiltin(t)
	kept := len(c.Train) + len(c.Test)
	t.Logf("%d lines: %d train, %d test pairs, %d too long; vocabularies %d English, %d Spanish words",
		c.Lines, len(c.Train), len(c.Test), c.TooLong, c.Src.Size(), c.Tgt.Size())
	if c.Lines != 13099 || kept+c.TooLong+c.TooShort != c.Lines || c.TooLong > c.Lines/20 {
		t.Errorf("%d lines, %d kept, %d too long, %d too short", c.Lines, kept, c.TooLong, c.TooShort)
	}
	if f := float64(len(c.Train)) / float64(kept); f < 0.88 || f > 0.92 {
		t.Errorf("training fraction %.3f, want about 0.9", f)
	}
	train := map[string]bool{}
	for _, p := range c.Train {
		train[p.SrcText] = true
	}
	for _, p := range c.Test {
		if train[p.SrcText] {
			t.Errorf("line %d %q is in both train and test", p.Line, p.SrcText)
		}
	}
	seedCfg, err := config.Load("../configs/translate/en-es-seed.toml", []string{"data.path=" + builtinBible})
	if err != nil {
		t.Fatal(err)
	}
	seed, err := LoadFor(seedCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed setting: %d train, %d test pairs; vocabularies %d, %d", len(seed.Train), len(seed.Test), seed.Src.Size(), seed.Tgt.Size())
	if len(seed.Train) < 3000 {
		t.Errorf("the seed's setting keeps only %d training pairs", len(seed.Train))
	}
}

// TestBucketsPay measures what length buckets save on the built-in corpus
// at en-es.toml's batch and maxima, per epoch of the training pairs:
// padded positions (B·(S+T) per batch, what the embeddings, feed-forward
// layers and output layer cost) and attention cells (B·(S²+T²+S·T), what
// the three attentions cost). `go test ./pairs -run Buckets -v` prints the
// table docs/translation.md quotes.
func TestBucketsPay(t *testing.T) {
	cfg, c := loadBuiltin(t)
	real := 0
	for _, p := range c.Train {
		real += len(p.Src) + 1 + len(p.Tgt) + 1
	}
	var last int
	for _, k := range []int{1, 2, 3, 4, 6} {
		b := NewBatcher(c.Train, cfg.Train.Batch, cfg.Data.MaxSource, cfg.Data.MaxTarget, k)
		positions, cells, batches := 0, 0, 0
		for _, p := range b.InOrder() {
			s := b.Shapes()[p.Bucket]
			positions += b.Batch() * (s.S + s.T)
			cells += b.Batch() * (s.S*s.S + s.T*s.T + s.S*s.T)
			batches++
		}
		if k == 1 {
			last = positions
		}
		t.Logf("buckets %d %v: %d batches, %d padded positions (%.0f%% real tokens, %.2f of one bucket's), %d attention cells",
			k, b.Shapes(), batches, positions, 100*float64(real)/float64(positions), float64(positions)/float64(last), cells)
		if positions > last {
			t.Errorf("%d buckets pad more than one", k)
		}
	}
}

// BenchmarkLoadBuiltin reads, tokenizes, splits and encodes the built-in
// corpus with en-es.toml's settings.
func BenchmarkLoadBuiltin(b *testing.B) {
	opts := Options{Split: 0.9, MinCount: 2, MinSource: 1, MaxSource: 24, MaxTarget: 32}
	for b.Loop() {
		if _, err := Load(builtinBible, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEpochFill draws an epoch's plan and fills every batch of it.
func BenchmarkEpochFill(b *testing.B) {
	c, err := Load(builtinBible, Options{Split: 0.9, MinCount: 2, MinSource: 1, MaxSource: 24, MaxTarget: 32})
	if err != nil {
		b.Fatal(err)
	}
	bt := NewBatcher(c.Train, 32, 24, 32, 1)
	x := bt.NewBatch(0)
	for b.Loop() {
		for _, p := range bt.Epoch(42, 0) {
			bt.Fill(p, x)
		}
	}
}
