package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/tokenfile"
)

// tokensConfig trains a small GPT on the char token files d/train.bin and
// d/val.bin, decoded with the meta.pkl beside them (nanoGPT's
// shakespeare_char layout).
const tokensConfig = `[data]
format = "tokens"
path = "d/train.bin"
val_path = "d/val.bin"
tokenizer = "char"
sampling = "random"
[model]
context = 8
embedding = 16
blocks = 1
heads = 2
residual = true
norm = "pre"
[train]
batch = 4
max_steps = 3
eval_batches = 2
`

// metaPkl is nanoGPT's meta.pkl of testdata/tiny.txt: 55 characters.
func metaPkl(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/nanogpt/meta.pkl")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tokenBytes is ids as a token file's content.
func tokenBytes(t *testing.T, ids []int) string {
	t.Helper()
	var b bytes.Buffer
	if err := tokenfile.Encode(&b, ids); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// someIDs is n ids of the 55-character vocabulary.
func someIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = (i * 7) % 55
	}
	return ids
}

// tokenFileInputs are TestBadInputs' rows for token files: each is refused
// in one line, exit 2, before a run folder is made.
func tokenFileInputs(t *testing.T) []badInput {
	meta := metaPkl(t)
	good := tokenBytes(t, someIDs(200))
	files := func(train, val, meta string) map[string]string {
		return map[string]string{"c.toml": tokensConfig, "d/train.bin": train, "d/val.bin": val, "d/meta.pkl": meta}
	}
	withVal := func(val string) map[string]string { return files(good, val, meta) }
	return []badInput{
		{name: "tokens: a token file of odd length", files: files(good+"\x01", good, meta),
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/train.bin has 401 bytes, an odd number: a token file holds 2-byte ids (little-endian uint16, as nanoGPT's prepare.py writes them)"},
		{name: "tokens: an id past the vocabulary", files: withVal(tokenBytes(t, append(someIDs(100), 55))),
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/val.bin holds id 55 at token 100 (byte offset 200), not below the vocabulary's 55 tokens"},
		{name: "tokens: an empty token file", files: withVal(""),
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/val.bin is empty"},
		{name: "tokens: too short for a window", files: withVal(tokenBytes(t, someIDs(9))),
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/val.bin has 9 tokens: one test window of context 8 needs at least 10"},
		{name: "tokens: a folder as the token file", files: map[string]string{"c.toml": tokensConfig, "d/train.bin": good, "d/val.bin/x": "", "d/meta.pkl": meta},
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/val.bin is a directory, not a regular file"},
		{name: "tokens: a FIFO as the token file", files: files(good, good, meta), setup: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "d", "train.bin")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"train", "c.toml"}, code: 2, msg: "token file d/train.bin is a named pipe (FIFO), not a regular file"},
		{name: "tokens: a missing token file", files: map[string]string{"c.toml": tokensConfig, "d/train.bin": good, "d/meta.pkl": meta},
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/val.bin does not exist and [data] prepare is not set"},
		{name: "tokens: a meta.pkl that does not parse", files: files(good, good, "(dp0\nS'itos'\np1\n"),
			args: []string{"train", "c.toml"}, code: 2, msg: "d/meta.pkl: "},
		{name: "tokens: a meta.pkl of another kind", files: files(good, good, "\x80\x04K\x07."),
			args: []string{"train", "c.toml"}, code: 2, msg: "d/meta.pkl: not a nanoGPT meta.pkl (no itos dictionary)"},
		{name: "tokens: no meta.pkl", files: files(good, good, meta), setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "d", "meta.pkl"))
		}, args: []string{"train", "c.toml"}, code: 2, msg: `d/meta.pkl does not exist: tokenizer "char" reads the characters of token files from nanoGPT's meta.pkl beside data.path`},
		{name: "tokens: the files' digest recorded otherwise", files: files(good, good, meta),
			args: []string{"train", "c.toml", "--set", "data.val_sha256=" + strings.Repeat("0", 64)}, code: 2, msg: "token file d/val.bin has sha256 "},
		{name: "tokens: split with token files", files: files(good, good, meta),
			args: []string{"train", "c.toml", "--set", "data.split=0.9"}, code: 2, msg: `data.split: 0.9 is not used with format = "tokens"`},
		{name: "tokens: data.prepare beside one old file", files: map[string]string{"c.toml": strings.Replace(tokensConfig, `tokenizer = "char"`, "tokenizer = \"gpt2\"\nprepare = \"shakespeare\"", 1), "d/val.bin": good},
			args: []string{"train", "c.toml"}, code: 2, msg: "token file d/train.bin is missing and d/val.bin is there: data.prepare writes both and replaces neither"},
		{name: "data prepare: no such recipe", args: []string{"data", "prepare", "openwebtext", "--out", "d"}, code: 2,
			msg: `there is no recipe "openwebtext" (recipes: shakespeare)`},
		{name: "data prepare: over an existing token file", files: map[string]string{"d/val.bin": good},
			args: []string{"data", "prepare", "shakespeare", "--out", "d"}, code: 2, msg: "--out d/val.bin: already exists and is not a file this command wrote; choose another output, or give --force to replace it"},
		{name: "data prepare: a recipe and --text", files: map[string]string{"t.txt": "some text\n"},
			args: []string{"data", "prepare", "shakespeare", "--text", "t.txt", "--out", "d"}, code: 2, msg: `data prepare takes a recipe or --text FILE, not both (got "shakespeare" and --text)`},
		{name: "data prepare: --split with a recipe", args: []string{"data", "prepare", "shakespeare", "--split", "0.5", "--out", "d"}, code: 2,
			msg: "--split is for gptg data prepare --text FILE: a recipe has its own split"},
		{name: "data toy: --split", args: []string{"data", "toy", "--split", "0.5", "--out", "t.txt"}, code: 2,
			msg: "gptg data toy does not use --split"},
		{name: "data list: a flag it does not use", args: []string{"data", "list", "--sentences", "5"}, code: 2,
			msg: "gptg data list does not use --sentences"},
		{name: "data export: flags it does not use", args: []string{"data", "export", "toy", "--seed", "3", "--text", "t.txt", "--out", "t.txt"}, code: 2,
			msg: "gptg data export does not use --seed, --text"},
		{name: "data prepare --text: no such file", args: []string{"data", "prepare", "--text", "nope.txt", "--out", "d"}, code: 2,
			msg: "nope.txt does not exist"},
		{name: "data prepare --text: not UTF-8", files: map[string]string{"t.txt": "caf\xe9\n"},
			args: []string{"data", "prepare", "--text", "t.txt", "--out", "d"}, code: 2, msg: "t.txt: text is not valid UTF-8 (bad byte 0xe9 at offset 3)"},
		{name: "data prepare --text: too short to split", files: map[string]string{"t.txt": "a"},
			args: []string{"data", "prepare", "--text", "t.txt", "--out", "d"}, code: 2, msg: "t.txt is too short for split 0.9: 0 training and 1 validation tokens"},
		{name: "data prepare --text: split 1", files: map[string]string{"t.txt": "some text\n"},
			args: []string{"data", "prepare", "--text", "t.txt", "--split", "1", "--out", "d"}, code: 2, msg: "--split 1 must be between 0 and 1 (exclusive)"},
	}
}

// goldenTokens is a gzipped token file of testdata/nanogpt/shakespeare,
// written by nanoGPT's own prepare.py with tiktoken (mkbin.sh there).
func goldenTokens(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open("../../testdata/nanogpt/shakespeare/" + name + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDataPrepareShakespeare: gptg data prepare shakespeare writes
// nanoGPT's data/shakespeare token files byte for byte, and --force
// writes them again.
func TestDataPrepareShakespeare(t *testing.T) {
	dir := t.TempDir()
	out := ok(t, dir, "data", "prepare", "shakespeare", "--out", "data/shakespeare")
	if want := "wrote data/shakespeare/train.bin (301966 tokens) and data/shakespeare/val.bin (36059 tokens)\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	for _, name := range []string{"train.bin", "val.bin"} {
		got, err := os.ReadFile(filepath.Join(dir, "data", "shakespeare", name))
		if err != nil {
			t.Fatal(err)
		}
		if want := goldenTokens(t, name); !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes differ from nanoGPT's %d", name, len(got), len(want))
		}
	}
	ok(t, dir, "data", "prepare", "shakespeare", "--out", "data/shakespeare", "--force")
}

// TestDataPrepareText: gptg data prepare --text on tiny-shakespeare's text
// writes nanoGPT's data/shakespeare token files byte for byte (its
// prepare.py is this split of its own text), and a text that is refused
// leaves no folder behind.
func TestDataPrepareText(t *testing.T) {
	dir := t.TempDir()
	ok(t, dir, "data", "export", "tinyshakespeare", "--out", "input.txt")
	out := ok(t, dir, "data", "prepare", "--text", "input.txt", "--out", "data/mine")
	if want := "wrote data/mine/train.bin (301966 tokens) and data/mine/val.bin (36059 tokens)\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	for _, name := range []string{"train.bin", "val.bin"} {
		got, err := os.ReadFile(filepath.Join(dir, "data", "mine", name))
		if err != nil {
			t.Fatal(err)
		}
		if want := goldenTokens(t, name); !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes differ from nanoGPT's %d", name, len(got), len(want))
		}
	}
	writeFiles(t, dir, map[string]string{"bad.txt": "caf\xe9\n"})
	if r := gptg(t, dir, "data", "prepare", "--text", "bad.txt", "--out", "data/bad"); r.code != 2 {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "bad")); err == nil {
		t.Error("a refused text left data/bad behind")
	}
}

// TestTrainOnTokenFiles trains and evaluates on char token files: the
// run records both files, eval reads the validation file from another
// folder, and --split is refused for it.
func TestTrainOnTokenFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"c.toml": tokensConfig, "d/train.bin": tokenBytes(t, someIDs(300)),
		"d/val.bin": tokenBytes(t, someIDs(100)), "d/meta.pkl": metaPkl(t)})
	ok(t, dir, "train", "c.toml")
	text, err := os.ReadFile(filepath.Join(dir, "runs", "c", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`val_path = "d/val.bin"`, "val_size = 200", "size = 600", "split = 0.0", `# validation file from this folder: "../../d/val.bin"`, "vocab = 55"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, text)
		}
	}
	other := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	out := ok(t, other, "eval", "../runs/c")
	if !strings.Contains(out, "token file "+filepath.Join(dir, "d", "val.bin")+": 23 test windows (context 8, stride 4), 5 batches of 4") {
		t.Errorf("eval: %s", out)
	}
	r := gptg(t, dir, "eval", "runs/c", "--split", "0.5")
	if r.code != 2 || !strings.Contains(r.stderr, "--split is for a text: run runs/c trained on token files") {
		t.Errorf("eval --split: exit %d, %s", r.code, r.stderr)
	}
}

// TestTokenFileLargerThanMemory trains on a 1 GiB training token file
// (sparse: half a billion zeros) under a ulimit -v that leaves the process
// 300 MiB beyond what `gptg version` takes: token files are read a window
// at a time, never whole (as ids they would take 1 GiB, as []int 4).
func TestTokenFileLargerThanMemory(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"c.toml": tokensConfig, "d/val.bin": tokenBytes(t, someIDs(100)), "d/meta.pkl": metaPkl(t), "d/train.bin": ""})
	if err := os.Truncate(filepath.Join(dir, "d", "train.bin"), 1<<30); err != nil {
		t.Fatal(err)
	}
	limit := peakVM(t, dir, "version") + 300<<10
	r := runGptgWith(t, dir, runOptions{ulimit: fmt.Sprintf("-v %d", limit), cpu: commandCPU}, "train", "c.toml")
	if r.code != 0 {
		t.Fatalf("train on a 1 GiB token file under ulimit -v %d: exit %d, %s", limit, r.code, r.stderr)
	}
	if r.maxRSSKB > 150<<10 {
		t.Errorf("peak RSS %d MiB training on a 1 GiB token file", r.maxRSSKB>>10)
	}
	if !strings.Contains(r.stdout, "done: 3 steps") {
		t.Errorf("stdout %s", r.stdout)
	}
}

// TestShakespeareBPEFromAFreshFolder: configs/nanogpt/shakespeare-bpe.toml
// trains from a folder without data/: its first run prepares nanoGPT's
// token files (checked against the config's digests), and the model
// samples GPT-2's tokens.
func TestShakespeareBPEFromAFreshFolder(t *testing.T) {
	cfg, err := filepath.Abs("../../configs/nanogpt/shakespeare-bpe.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := gptg(t, dir, "train", cfg, "--set", "train.max_steps=1", "--set", "train.eval_batches=1")
	if r.code != 0 || !strings.Contains(r.stdout, "done: 1 steps") {
		t.Fatalf("gptg train shakespeare-bpe.toml: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
	for _, name := range []string{"train.bin", "val.bin"} {
		got, err := os.ReadFile(filepath.Join(dir, "data", "shakespeare", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, goldenTokens(t, name)) {
			t.Errorf("the prepared %s is not nanoGPT's", name)
		}
	}
	if out := ok(t, dir, "sample", "runs/shakespeare-bpe", "--tokens", "5", "--prompt", "ROMEO:"); !strings.HasPrefix(out, "ROMEO:") {
		t.Errorf("sample: %q", out)
	}
}
