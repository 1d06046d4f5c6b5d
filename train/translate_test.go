package train

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/translate"
)

// TestTranslationLearnsToy trains a small encoder–decoder on a task only
// attention over the source solves: the target is the source's words
// mapped one to one (aN → bN) in reverse order. It requires the test loss
// to fall from ln(24) ≈ 3.2 to below 0.9 (with label smoothing 0.1 over 24
// words its floor is ≈ 0.62), and greedy and beam decoding of new
// sentences to give the exact reversal for most of them.
func TestTranslationLearnsToy(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	data := filepath.Join(dir, "toy.tsv")
	if err := os.WriteFile(data, []byte(toypairs.Random(rng, 3000, 20, 3, 7)), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`[data]
format = "pairs"
path = %q
split = 0.9
min_count = 1
max_source = 8
max_target = 8

[model]
arch = "encoder-decoder"
embedding = 32
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 64
positions = "sinusoidal"
norm = "post"
activation = "relu"
dropout = 0.0
label_smoothing = 0.1

[train]
batch = 32
max_steps = 400
lr = 3e-3
warmup = 30
eval_every = 200
out = %q
`, data, filepath.Join(dir, "run"))
	cfgPath := filepath.Join(dir, "toy.toml")
	if err := os.WriteFile(cfgPath, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, Options{Log: io.Discard, Backend: graph.Backend{Threads: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.TestLoss < 0.9) {
		t.Fatalf("test loss %.4f after %d steps, want < 0.9", res.TestLoss, res.Steps)
	}
	m, err := translate.Load(filepath.Join(res.Dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	tr := translate.NewTranslator(m, graph.Backend{Threads: 1})
	// Batched greedy decoding (gptg eval's) gives what one sentence at a
	// time gives, padded rows and all.
	rows := []int{4, 5, 6, 2, 7, 2, 0, 0, 8, 9, 10, 2} // three sources, EOS = 2, PAD = 0
	got, err := tr.GreedyBatch(3, rows)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		var words []string
		for _, id := range rows[r*4 : (r+1)*4] {
			if id == 2 {
				break
			}
			words = append(words, m.Src.Words()[id])
		}
		one, err := tr.Translate(strings.Join(words, " "), translate.Options{Beam: 1})
		if err != nil {
			t.Fatal(err)
		}
		if batched := strings.Join(m.Tgt.Decode(got[r]), " "); batched != one.Text {
			t.Errorf("row %d: batched greedy %q, one at a time %q", r, batched, one.Text)
		}
	}
	for _, beam := range []int{1, 3} {
		right := 0
		const n = 20
		for i := range n {
			var src, want []string
			for j := range 3 + i%5 {
				w := (7*i + 3*j) % 20
				src = append(src, fmt.Sprintf("a%d", w))
				want = append([]string{fmt.Sprintf("b%d", w)}, want...)
			}
			r, err := tr.Translate(strings.Join(src, " "), translate.Options{Beam: beam, Alpha: 0.6})
			if err != nil {
				t.Fatal(err)
			}
			if r.Text == strings.Join(want, " ") {
				right++
			}
		}
		if right < n*3/4 {
			t.Errorf("beam %d: %d of %d sentences reversed right, want at least %d", beam, right, n, n*3/4)
		}
	}
}
