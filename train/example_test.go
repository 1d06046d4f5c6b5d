package train

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/toypairs"
	"github.com/gptg/gptg/pairs"
)

// TestTranslationRecordsExample: a translation run's config.toml records
// the first training pair whose words the model knows (the pairs before it
// hold words seen once, UNK at min_count 2), and Example reads it back.
func TestTranslationRecordsExample(t *testing.T) {
	dir := t.TempDir()
	var rare strings.Builder
	for i := range 20 {
		fmt.Fprintf(&rare, "a1 q%d a2\tb2 r%d b1\n", i, i)
	}
	data := filepath.Join(dir, "toy.tsv")
	writeFile(t, data, rare.String()+toypairs.Counted(200))
	path := filepath.Join(dir, "toy.toml")
	writeFile(t, path, toypairs.Config(data, filepath.Join(dir, "run"), 1, "", ""))
	cfg, err := config.Load(path, []string{"data.min_count=2"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pairs.LoadFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Train[0].Src, pairs.UNK) {
		t.Fatalf("the first training pair %q has no unknown word: the test needs one", c.Train[0].SrcText)
	}
	want := ""
	for _, p := range c.Train {
		if !slices.Contains(p.Src, pairs.UNK) {
			want = p.SrcText
			break
		}
	}
	if _, err := Run(context.Background(), cfg, Options{Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "run", ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := Example(text); got != want || want == "" {
		t.Errorf("the run records example %q, want %q (the first training pair without UNK); config.toml:\n%s", got, want, text)
	}
	if _, err := config.Parse(ConfigFile, text); err != nil {
		t.Errorf("config.toml with its example line: %v", err)
	}
}

func TestExampleLine(t *testing.T) {
	for _, s := range []string{"the king", `he said "no" \ yes`, "¿Qué? 日本語\t."} {
		text := []byte("# run id: x\n" + exampleHeader(s, "x") + "[data]\npath = \"a\"\n")
		if got := Example(text); got != s {
			t.Errorf("Example of the line for %q: %q", s, got)
		}
	}
	for name, text := range map[string]string{
		"none":             "# run id: x\n[data]\n",
		"after the header": "[data]\n" + exampleHeader("late", "x"),
		"mangled":          examplePrefix + "\"unterminated\n[data]\n",
		"too long":         exampleHeader(strings.Repeat("w ", maxExampleBytes), "x") + "[data]\n",
	} {
		if got := Example([]byte(text)); got != "" {
			t.Errorf("%s: Example = %q, want none", name, got)
		}
	}
	if exampleHeader("", "x") != "" {
		t.Error("an empty example has a line")
	}
}

// TestExampleText: a language model's example is the start of its
// training text: the first line (characters) or sentence (words), within
// the model's context, so every token of it is one the model knows.
func TestExampleText(t *testing.T) {
	for _, c := range []struct {
		name, text, kind string
		context          int
		want             string
	}{
		{"first line", "First Citizen:\nBefore we proceed any further, hear me speak.\n", corpus.Char, 64, "First Citizen:"},
		{"within the context", "First Citizen:\nBefore we proceed\n", corpus.Char, 5, "First"},
		{"a short first line runs on", "I\nam here\nnow\n", corpus.Char, 16, "Iam here"},
		{"first sentence", "the big cat chases a red ball . a dog sees the cat .\n", corpus.Word, 16, "the big cat chases a red ball ."},
		{"words within the context", "the big cat chases a red ball .\n", corpus.Word, 3, "the big cat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.txt")
			if err := os.WriteFile(path, []byte(strings.Repeat(c.text, 20)), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := corpus.Load(path, c.kind, c.context, 0, 0.9)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := exampleText(d); err != nil || got != c.want {
				t.Errorf("example %q (error %v), want %q", got, err, c.want)
			}
		})
	}
}
