package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateConfigs loads the translation chapter's configs and checks
// what Load resolves for an encoder-decoder over a pairs corpus.
func TestTranslateConfigs(t *testing.T) {
	c, err := Load("../configs/translate/en-es.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d, m := c.Data, c.Model
	if d.Format != "pairs" || d.Tokenizer != "word" || d.MinCount != 2 || d.MaxSource != 24 || d.MaxTarget != 32 {
		t.Errorf("data = %+v", d)
	}
	if d.SourceLen() != 25 || d.TargetLen() != 33 {
		t.Errorf("SourceLen, TargetLen = %d, %d, want 25, 33", d.SourceLen(), d.TargetLen())
	}
	if !m.EncoderDecoder() || m.Context != 33 || m.EncoderBlocks != 2 || m.DecoderBlocks != 2 || m.FFHidden != 512 ||
		m.Norm != "post" || m.Positions != "sinusoidal" || m.LabelSmoothing != 0.1 {
		t.Errorf("model = %+v", m)
	}
	if !m.QKV || !m.Mask || !m.OutProj || !m.Residual {
		t.Errorf("the encoder-decoder's blocks must have every switch on: %+v", m)
	}
	if c.Train.Schedule != "noam" || c.Train.Warmup != 1000 {
		t.Errorf("train = %+v", c.Train)
	}

	seed, err := Load("../configs/translate/en-es-seed.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := seed.Model; s.Context != 25 || s.EncoderBlocks != 1 || s.DecoderBlocks != 1 || s.FFHidden != 256 || s.Heads != 1 || s.Embedding != 64 {
		t.Errorf("seed model = %+v", s)
	}
	if seed.Data.MinSource != 8 || seed.Data.MaxSource != 16 || seed.Train.Batch != 32 {
		t.Errorf("seed data = %+v, batch %d", seed.Data, seed.Train.Batch)
	}

	// Every ablation differs from the base in the one switch its name says.
	want := map[string][]string{
		"1-base":         nil,
		"2-prenorm":      {"model.norm=pre"},
		"3-learned":      {"model.positions=learned"},
		"4-one-head":     {"model.heads=1"},
		"5-no-smoothing": {"model.label_smoothing=0"},
	}
	files, _ := filepath.Glob("../configs/translate/ablation/*.toml")
	if len(files) != len(want) {
		t.Errorf("ablation files %v, want %d", files, len(want))
	}
	for _, f := range files {
		a, err := Load(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		diff := a.Diff(c)
		// The run folder follows the file's name; that is not a switch.
		var got []string
		for _, kv := range diff {
			if kv != "train.out="+filepath.Join("runs", a.Name) {
				got = append(got, kv)
			}
		}
		if w, ok := want[a.Name]; !ok || len(got) != len(w) || (len(w) == 1 && got[0] != w[0]) {
			t.Errorf("%s differs from en-es.toml in %v, want %v", f, got, w)
		}
	}

	// An encoder-decoder without a norm key gets the paper's post-norm
	// (the decoder-only default, none, it cannot have); a given one stays.
	for _, tc := range []struct{ norm, want string }{{"", "post"}, {"norm = \"pre\"\n", "pre"}} {
		p := filepath.Join(t.TempDir(), "x.toml")
		text := "[data]\nformat = \"pairs\"\n[model]\narch = \"encoder-decoder\"\n" + tc.norm
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Load(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.Model.Norm != tc.want {
			t.Errorf("%q: model.norm %q, want %q", text, d.Model.Norm, tc.want)
		}
	}

	// The resolved config round-trips through TOML, as a run folder keeps it.
	text, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "en-es.toml")
	if err := os.WriteFile(p, text, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(p, nil)
	if err != nil {
		t.Fatalf("reloading: %v\n%s", err, text)
	}
	if back.Data != c.Data || back.Model != c.Model || back.Train != c.Train {
		t.Errorf("round trip changed the config\nbefore %+v\nafter  %+v", *c, *back)
	}
}

func TestTranslateConfigErrors(t *testing.T) {
	const pairs = "[data]\nformat = \"pairs\"\npath = \"p.tsv\"\n"
	const encdec = "[model]\narch = \"encoder-decoder\"\nnorm = \"post\"\n"
	for _, c := range []struct {
		name, text string
		sets       []string
		want       string
	}{
		{"pairs with the decoder-only model", pairs, nil,
			`x.toml: model.arch: "decoder-only" cannot read a pairs corpus (data.format = "pairs"): set arch = "encoder-decoder"`},
		{"encoder-decoder on a text", encdec, nil,
			`x.toml: data.format: "text" is not a translation corpus: model.arch = "encoder-decoder" needs format = "pairs"`},
		{"unknown format", "[data]\nformat = \"pair\"\n", nil,
			`x.toml: data.format: "pair" is not allowed; did you mean "pairs"? (allowed: text, tokens, pairs)`},
		{"char tokens for pairs", pairs + "tokenizer = \"char\"\n" + encdec, nil,
			`x.toml: data.tokenizer: "char" cannot read a pairs corpus (pairs are read word by word`},
		{"norm none", pairs + "[model]\narch = \"encoder-decoder\"\nnorm = \"none\"\n", nil,
			`x.toml: model.norm: "none" is not allowed with arch = "encoder-decoder" (allowed: post, the paper's; pre)`},
		{"bfloat16", pairs + encdec + "dtype = \"bfloat16\"\n", nil,
			`x.toml: model.dtype: "bfloat16" is for the decoder-only model: the encoder-decoder computes in float32 or float64`},
		{"mask off", pairs + encdec + "mask = false\n", nil,
			`x.toml: model.mask: cannot be false with model.arch = "encoder-decoder"`},
		{"mask off on the command line", pairs + encdec, []string{"model.residual=false"},
			`--set model.residual: cannot be false with model.arch = "encoder-decoder"`},
		{"context too short", pairs + "max_source = 30\n" + encdec + "context = 20\n", nil,
			`x.toml: model.context: 20 is too short for data.max_source 30 and data.max_target 24 (needs at least 31`},
		{"unknown arch", "[model]\narch = \"encoder_decoder\"\n", nil,
			`x.toml: model.arch: "encoder_decoder" is not allowed; did you mean "encoder-decoder"? (allowed: decoder-only, encoder-decoder)`},
		{"sinusoidal in the decoder-only model", "[model]\npositions = \"sinusoidal\"\n", nil,
			`x.toml: model.positions: only the encoder-decoder reads it (model.arch is "decoder-only"); the decoder-only model learns its positions`},
		{"encoder blocks in the decoder-only model", "[model]\nencoder_blocks = 2\n", nil,
			`x.toml: model.encoder_blocks: only the encoder-decoder reads it (model.arch is "decoder-only"): use model.blocks`},
		{"label smoothing 1", pairs + encdec + "label_smoothing = 1\n", nil,
			`x.toml: model.label_smoothing: 1 is out of range (allowed: 0 <= label_smoothing < 1, 0 = off; the paper's is 0.1)`},
		{"label smoothing wrong type", pairs + encdec + "label_smoothing = \"0.1\"\n", nil,
			`x.toml: model.label_smoothing: expected a number, got string "0.1"`},
		{"max below min", pairs + "min_source = 8\nmax_source = 4\n" + encdec, nil,
			`x.toml: data.max_source: 4 is out of range (allowed: 8..4095)`},
		{"min count 0", pairs + "min_count = 0\n" + encdec, nil,
			`x.toml: data.min_count: 0 is out of range (allowed: 1..1073741824)`},
		{"buckets 0", pairs + "buckets = 0\n" + encdec, nil,
			`x.toml: data.buckets: 0 is out of range (allowed: 1..64)`},
		{"noam without warmup", "[train]\nschedule = \"noam\"\nwarmup = 0\n", nil,
			`x.toml: train.warmup: 0 is invalid with schedule = "noam" (must be >= 1`},
		{"unknown schedule", "[train]\nschedule = \"linear\"\n", nil,
			`x.toml: train.schedule: "linear" is not allowed (allowed: cosine, noam)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadOne(t, c.text, c.sets...)
			if err == nil {
				t.Fatalf("loaded without error:\n%s", c.text)
			}
			checkError(t, err, "", []string{c.want}, "")
		})
	}
}

// TestTranslationConfigSaysVocabIsUnused: a translation run's config.toml
// says why its model.vocab is 0 (two vocabularies, from the pairs), and
// still loads back to the same config.
func TestTranslationConfigSaysVocabIsUnused(t *testing.T) {
	c, err := Load("../configs/translate/en-es.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	text, err := c.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "\nvocab = 0 # not used: the source and target vocabularies come from the pairs") {
		t.Errorf("config.toml of a translation run:\n%s", text)
	}
	back, err := Parse("config.toml", text)
	if err != nil {
		t.Fatal(err)
	}
	if back.Model != c.Model || back.Data != c.Data || back.Train != c.Train {
		t.Errorf("read back: %+v, want %+v", back.Model, c.Model)
	}
}
