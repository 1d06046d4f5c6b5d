package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/internal/tiktokenids"
	"github.com/gptg/gptg/savedmodel"
)

// goldenIDs is bpe's golden file of name as gptg tokens --ids prints it:
// tiktoken's own ids.
func goldenIDs(t *testing.T, name string) string {
	t.Helper()
	ids, err := tiktokenids.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	words := make([]string, len(ids))
	for i, id := range ids {
		words[i] = strconv.Itoa(id)
	}
	return strings.Join(words, " ") + "\n"
}

func TestTokensIDsAreTiktokens(t *testing.T) {
	stress, err := filepath.Abs("../../bpe/testdata/stress.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := goldenIDs(t, "stress")
	if got := ok(t, t.TempDir(), "tokens", "--tokenizer", "gpt2", "--ids", stress); got != want {
		t.Fatalf("--ids of stress.txt differ from tiktoken's (%d bytes, want %d)", len(got), len(want))
	}
	dir := t.TempDir()
	copyFile(t, stress, filepath.Join(dir, "in.txt"))
	r := runGptgWith(t, dir, runOptions{stdin: "in.txt"}, "tokens", "--tokenizer", "gpt2", "--ids", "-")
	if r.code != 0 || r.stderr != "" || r.stdout != want {
		t.Fatalf("--ids - (standard input): exit %d, stderr %q, ids equal: %v", r.code, r.stderr, r.stdout == want)
	}
}

func TestTokensShow(t *testing.T) {
	out := ok(t, t.TempDir(), "tokens", "--tokenizer", "gpt2", "Hello world, 我\t")
	want := `       #      id bytes  piece
       0   15496     5  Hello
       1     995     6  ·world
       2      11     1  ,
       3   10545     2  ·<0xE6>
       4     230     1  <0x88>
       5     239     1  <0x91>
       6     197     1  \t
7 tokens (7 distinct) of 17 bytes, 15 characters: 2.43 bytes per token (gpt2, 50257 tokens)
`
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	dir := t.TempDir()
	// tiktoken encodes NUL and other control bytes like any other.
	if err := os.WriteFile(filepath.Join(dir, "nul.txt"), []byte("a\x00b\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ok(t, dir, "tokens", "--tokenizer", "gpt2", "--ids", "nul.txt"); got != "64 188 65 189\n" {
		t.Errorf("--ids of a\\x00b\\x01 = %q, want tiktoken's 64 188 65 189", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ok(t, dir, "tokens", "--tokenizer", "gpt2", "--ids", "empty.txt"); got != "" {
		t.Errorf("--ids of an empty text printed %q", got)
	}
}

func TestTokensBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("fine text\nthen \xe2\x82 broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--tokenizer", "gpt2", "--ids", "bad.txt"}, "gptg tokens: bad.txt: text is not valid UTF-8 (bad byte 0xe2 at offset 15)\n"},
		{[]string{"--tokenizer", "gpt2", "--file", "bad.txt"}, "bad byte 0xe2 at offset 15"},
		{[]string{"--tokenizer", "gpt2", "--ids", "missing.txt"}, "missing.txt: no such file"},
		{[]string{"--tokenizer", "gpt2", "--ids", "."}, "is a directory, not a regular file"},
		{[]string{"--tokenizer", "gpt2"}, "tokens needs one text: TEXT, --file FILE or --ids FILE"},
		{[]string{"--tokenizer", "gpt2", "a", "b"}, "tokens takes one TEXT, got 2 arguments"},
		{[]string{"--tokenizer", "gpt2", "x", "--ids", "bad.txt"}, "tokens needs one text"},
		{[]string{"--tokenizer", "gpt3", "x"}, `--tokenizer "gpt3": unknown tokenizer (built in: gpt2)`},
		{[]string{"--tokenizer", "char", "x"}, "a char vocabulary is a corpus's own"},
		{[]string{"Hello"}, "Hello: no such model file or run folder; to split a text with GPT-2's tokenizer give --tokenizer gpt2"},
		{[]string{causalModel, "Zürich"}, `the text: 2 characters outside the vocabulary: "Z", "ü"`},
	} {
		r := gptg(t, dir, append([]string{"tokens"}, c.args...)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("tokens %q: exit %d, stdout %q, stderr %q; want exit 2, no output and %q", c.args, r.code, r.stdout, r.stderr, c.msg)
		}
	}
}

// A text of one 64 MB line is read a stretch at a time: the process holds
// much less than the text (the ids of all of it would take 136 MB as
// ints, the text itself 64 MB).
func TestTokensLongLineBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	words := strings.Fields(string(must(os.ReadFile("../../corpus/builtin/tinyshakespeare.txt"))))
	var b strings.Builder
	for i := 0; b.Len() < 64<<20; i++ {
		b.WriteString(words[(i*7919)%len(words)])
		b.WriteByte(' ')
	}
	if err := os.WriteFile(filepath.Join(dir, "line.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runGptg(t, dir, nil, 60e9, "tokens", "--tokenizer", "gpt2", "--ids", "line.txt")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, " ") + 1; n < (64<<20)/8 || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("%d ids on %d lines", n, strings.Count(r.stdout, "\n"))
	}
	if r.maxRSSKB > 100<<10 {
		t.Errorf("peak RSS %d MB for a 64 MB line, want under 100 MB", r.maxRSSKB>>10)
	}
	t.Logf("64 MB in one line: peak RSS %d MB", r.maxRSSKB>>10)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A char model's own vocabulary splits a text too.
func TestTokensOfACharModel(t *testing.T) {
	out := ok(t, t.TempDir(), "tokens", filepath.Dir(causalModel), "Fir st")
	want := `       #      id bytes  piece
       0      15     1  F
       1      38     1  i
       2      47     1  r
       3       1     1  ·
       4      48     1  s
       5      49     1  t
6 tokens (6 distinct) of 6 bytes, 6 characters: 1.00 bytes per token (char, 55 tokens)
`
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// gpt2Model is a tiny model trained a few steps on GPT-2's tokens, made
// once for the tests that need one.
var gpt2Model = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gptg-gpt2-model-")
	if err != nil {
		return "", err
	}
	c := testmodel.Config(filepath.Join(dir, "run"), true, 3)
	c.Data.Tokenizer = corpus.GPT2
	c.Model.Dtype = "float32"
	return testmodel.Train(c)
})

// A model trained with tokenizer = "gpt2": its file names the tokenizer
// and carries no vocabulary list, and sample, attention, inspect and
// tokens work on it.
func TestGPT2ModelEverywhere(t *testing.T) {
	model, err := gpt2Model()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(model))) })
	m, err := savedmodel.LoadMeta(model)
	if err != nil {
		t.Fatal(err)
	}
	if m.Meta["tokenizer"] != "gpt2" || m.Meta["vocab"] != "" || m.Vocab.Kind() != corpus.GPT2 || m.Spec.Vocab != 50257 {
		t.Fatalf("tokenizer %q, vocab metadata of %d bytes, kind %q, model.vocab %d", m.Meta["tokenizer"], len(m.Meta["vocab"]), m.Vocab.Kind(), m.Spec.Vocab)
	}
	dir := t.TempDir()
	out := ok(t, dir, "sample", model, "--prompt", "First Citizen", "--tokens", "40", "--temperature", "1.5")
	if !strings.HasPrefix(out, "First Citizen") || !utf8.ValidString(out) {
		t.Errorf("sample: %q (valid UTF-8: %v)", out, utf8.ValidString(out))
	}
	att := ok(t, dir, "attention", model, "--text", "First Citizen:")
	if !strings.Contains(att, `"First"`) || !strings.Contains(att, `" Citizen"`) || !strings.Contains(att, `":"`) {
		t.Errorf("attention labels are not GPT-2's pieces:\n%s", att)
	}
	if insp := ok(t, dir, "inspect", model); !strings.Contains(insp, "tokenizer: gpt2") {
		t.Errorf("inspect:\n%s", insp)
	}
	stress, err := filepath.Abs("../../bpe/testdata/stress.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := ok(t, dir, "tokens", filepath.Dir(model), "--ids", stress); got != goldenIDs(t, "stress") {
		t.Error("tokens with the model's tokenizer differ from tiktoken's")
	}
	if got := ok(t, dir, "attention", model, "--text", "我我", "--format", "svg", "--out", "a.svg"); !strings.Contains(got, "wrote") {
		t.Errorf("attention picture: %q", got)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "a.svg"))
	if err != nil || !utf8.Valid(svg) || !strings.Contains(string(svg), "&lt;0xE6&gt;&lt;0x88&gt;") {
		t.Errorf("the picture's labels do not show 我's first two bytes as <0xE6><0x88> (err %v)", err)
	}
}

// tokensInputs are the rows of TestBadInputs (docs/errors.md) for gptg
// tokens.
func tokensInputs() []badInput {
	return []badInput{
		{name: "tokens: text not UTF-8", files: map[string]string{"t.txt": "caf\xe9 au lait"},
			args: []string{"tokens", "--tokenizer", "gpt2", "--ids", "t.txt"}, code: 2, msg: "t.txt: text is not valid UTF-8 (bad byte 0xe9 at offset 3)"},
		{name: "tokens: text not UTF-8 on standard input", files: map[string]string{"t.txt": "caf\xe9 au lait"}, stdin: "t.txt",
			args: []string{"tokens", "--tokenizer", "gpt2", "--ids", "-"}, code: 2, msg: "standard input: text is not valid UTF-8 (bad byte 0xe9 at offset 3)"},
		{name: "tokens: unknown tokenizer", args: []string{"tokens", "--tokenizer", "gpt-2", "hello"}, code: 2, msg: `--tokenizer "gpt-2": unknown tokenizer (built in: gpt2)`},
		{name: "tokens: text without a tokenizer", args: []string{"tokens", "hello"}, code: 2,
			msg: "hello: no such model file or run folder; to split a text with GPT-2's tokenizer give --tokenizer gpt2"},
	}
}
