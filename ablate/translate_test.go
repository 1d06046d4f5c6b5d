package ablate

import (
	"context"
	"github.com/gptg/gptg/internal/gptgbin"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/toypairs"
)

// TestAblationTranslation runs two encoder–decoder variants (post and pre
// norm) on a toy pairs corpus: every run finishes with its parameter
// count, its test loss standing in for the prefix-only one, and the greedy
// translation of the prompt as its sample; a second call reuses them. Ablate once read a translation
// model file as a GPT's and failed every run at its summary.
func TestAblationTranslation(t *testing.T) {
	exe := gptgbin.Path(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	data := filepath.Join(dir, "toy.tsv")
	if err := os.WriteFile(data, []byte(toypairs.Random(rng, 200, 10, 3, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := writeConfig(t, dir, "post", `
[data]
format = "pairs"
path = "`+data+`"
split = 0.9
min_count = 1
max_source = 6
max_target = 6
[model]
arch = "encoder-decoder"
embedding = 16
heads = 2
encoder_blocks = 1
decoder_blocks = 1
ff_hidden = 32
dropout = 0.0
dtype = "float64"
[train]
batch = 16
max_steps = 20
warmup = 5
eval_every = 10
log_every = 5
`)
	pre := writeConfig(t, dir, "pre", "extends = \"post.toml\"\n[model]\nnorm = \"pre\"\n")
	out := filepath.Join(t.TempDir(), "abl")
	specs, err := Plan([]string{base, pre}, []int64{1}, out)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Out: out, Jobs: 2, Base: base, Exe: exe, Log: &strings.Builder{}, SamplePrompt: "a1 a2 a3"}
	results, err := Run(context.Background(), specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil || r.Status != Finished {
			t.Fatalf("%s: %v %v", r.Variant, r.Status, r.Err)
		}
		if r.Params == 0 || r.TestLoss <= 0 || !r.PrefixIsPlain || r.PrefixLoss != r.TestLoss {
			t.Errorf("%s: incomplete result %+v", r.Variant, r)
		}
		if !strings.HasPrefix(r.Sample, "a1 a2 a3 → ") {
			t.Errorf("%s: sample %q is not the prompt's translation", r.Variant, r.Sample)
		}
	}
	// A translation run keeps no checkpoint; its finished folder is reused,
	// not refused as "a model but no checkpoint".
	again, err := Run(context.Background(), specs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again {
		if r.Err != nil || r.Status != Finished || !r.Reused || r.TestLoss != results[i].TestLoss {
			t.Errorf("%s again: %v reused=%v err=%v", r.Variant, r.Status, r.Reused, r.Err)
		}
	}
}
