package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/modelfile"
)

// The rows and tests of this file are hostile inputs: nanoGPT checkpoints
// built to hang an import or take all memory, outputs named as devices,
// links and inputs, values that would inject lines into scripts, results
// that must not claim more than was done, and messages that must not echo
// whatever they are given.

// pickle builders: protocol 2 opcodes, enough to write the checkpoints
// and meta.pkl files of nanoGPT with hostile values in them.
func pStr(s string) string {
	return "X" + string(binary.LittleEndian.AppendUint32(nil, uint32(len(s)))) + s
}
func pInt(n int) string { return "J" + string(binary.LittleEndian.AppendUint32(nil, uint32(int32(n)))) }
func pFloat(f float64) string {
	return "G" + string(binary.BigEndian.AppendUint64(nil, math.Float64bits(f)))
}
func pTuple(items ...string) string { return "(" + strings.Join(items, "") + "t" }
func pDict(kv ...string) string     { return "}(" + strings.Join(kv, "") + "u" }
func pOrderedDict(kv ...string) string {
	return "ccollections\nOrderedDict\n)R(" + strings.Join(kv, "") + "u"
}

// pLong4 is a LONG4 integer of n bytes (0x01 repeated: positive).
func pLong4(n int) string {
	return "\x8b" + string(binary.LittleEndian.AppendUint32(nil, uint32(n))) + strings.Repeat("\x01", n)
}

// pTensor is torch's _rebuild_tensor_v2 of a float32 storage named key of
// numel elements, viewed at offset 0 with the given (contiguous) shape.
func pTensor(key string, numel int, shape ...int) string {
	var size, stride []string
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		size = append([]string{pInt(shape[i])}, size...)
		stride = append([]string{pInt(s)}, stride...)
		s *= shape[i]
	}
	storage := pTuple(pStr("storage"), "ctorch\nFloatStorage\n", pStr(key), pStr("cpu"), pInt(numel)) + "Q"
	return "ctorch._utils\n_rebuild_tensor_v2\n" +
		pTuple(storage, pInt(0), pTuple(size...), pTuple(stride...), "\x89", pOrderedDict()) + "R"
}

// nanoArgs is nanoGPT's model_args for the 55-character vocabulary of
// testdata/nanogpt/meta.pkl, with n_embd given as a pickle value.
func nanoArgs(nEmbd string) string {
	return pDict(pStr("n_layer"), pInt(1), pStr("n_head"), pInt(1), pStr("n_embd"), nEmbd,
		pStr("block_size"), pInt(4), pStr("bias"), "\x88", pStr("vocab_size"), pInt(55), pStr("dropout"), pFloat(0))
}

// nanoZip writes ckpt.pt into dir: a torch.save archive of the pickle
// {"model": model, "model_args": args, "iter_num": 0} and the storages,
// each that many zero bytes, deflated when deflate is set. The zeros are
// written a megabyte at a time: the test process's memory counts in the
// peak of the gptg it starts next (vfork shares it until exec).
func nanoZip(t *testing.T, dir, args, model string, storages map[string]int, deflate bool) {
	t.Helper()
	pkl := "\x80\x02" + pDict(pStr("model"), model, pStr("model_args"), args, pStr("iter_num"), pInt(0)) + "."
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	z.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	add := func(name string, data []byte, repeat int, method uint16) {
		w, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		for range repeat {
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("ckpt/data.pkl", []byte(pkl), 1, zip.Store)
	method := zip.Store
	if deflate {
		method = zip.Deflate
	}
	for k, n := range storages {
		chunk := make([]byte, min(n, 1<<20))
		add("ckpt/data/"+k, chunk, n/len(chunk), method)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ckpt.pt"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostileInputs are the rows of TestBadInputs for hostile inputs.
func hostileInputs(t *testing.T) []badInput {
	mkfifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	both := func(fs ...func(t *testing.T, dir string)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			for _, f := range fs {
				f(t, dir)
			}
		}
	}
	importArgs := []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}
	return []badInput{
		// 1. Integers of a million digits, refused while scanning: decoding
		// one takes math/big quadratic time.
		{name: "import: meta.pkl holding an integer of 1 MB (LONG4)", setup: nanoCheckpoint,
			files: map[string]string{"meta.pkl": "\x80\x02" + pLong4(1<<20) + "."},
			args:  importArgs, code: 2, maxMB: 100, msg: "meta.pkl: pickle LONG4 at byte 2 is an integer of 1048576 bytes; a checkpoint's integers fit in 16"},
		{name: "import: model_args.n_embd = 1 << 16,000,000", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			nanoZip(t, dir, nanoArgs(pLong4(2_000_001)), pOrderedDict(), nil, false)
		}, args: importArgs, code: 2, maxMB: 100, msg: "is an integer of 2000001 bytes; a checkpoint's integers fit in 16"},
		{name: "import: an integer of 4 million digits (protocol 0 LONG)", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			nanoZip(t, dir, nanoArgs("L"+strings.Repeat("7", 4_000_000)+"L\n"), pOrderedDict(), nil, false)
		}, args: importArgs, code: 2, maxMB: 100, msg: "pickle LONG at byte 104 is a line of more than 64 bytes"},
		{name: "import: a float of 10 MB of text", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			nanoZip(t, dir, nanoArgs("F"+strings.Repeat("1", 10_000_000)+"\n"), pOrderedDict(), nil, false)
		}, args: importArgs, code: 2, maxMB: 100, msg: "pickle FLOAT at byte 104 is a line of more than 64 bytes"},
		// 2, 3. Pipes and devices, refused before they are opened for reading.
		{name: "import: the checkpoint is a named pipe", setup: both(nanoMeta, mkfifo("ckpt.pt")),
			args: importArgs, code: 2, msg: "ckpt.pt: is a named pipe (FIFO), not a regular file"},
		{name: "import --meta a named pipe", setup: both(nanoCheckpoint, mkfifo("fifo.pkl")),
			args: []string{"import", "nanogpt", "ckpt.pt", "--meta", "fifo.pkl", "--out", "m.safetensors"}, code: 2, msg: "fifo.pkl: is a named pipe (FIFO), not a regular file"},
		{name: "import --meta /dev/zero", setup: nanoCheckpoint,
			args: []string{"import", "nanogpt", "ckpt.pt", "--meta", "/dev/zero", "--out", "m.safetensors"}, code: 2, maxMB: 100, msg: "/dev/zero: is a character device, not a regular file"},
		// 4. A zip bomb: 256 MiB of zeros deflated into 250 KB.
		{name: "import: a storage of 256 MiB of deflated zeros", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			const numel = 64 << 20
			nanoZip(t, dir, nanoArgs(pInt(16)), pOrderedDict(pStr("transformer.wte.weight"), pTensor("0", numel, 55, 16)),
				map[string]int{"0": 4 * numel}, true)
		}, args: importArgs, code: 2, maxMB: 100, msg: "would unpack the archive past 8 times its size (a zip bomb?)"},
		// 6. Outputs: never through a device, a FIFO or a folder, never over a link.
		{name: "data toy --out a named pipe", setup: mkfifo("fifo"), args: []string{"data", "toy", "--out", "fifo"}, code: 2,
			msg: "--out fifo: exists and is a named pipe (FIFO); gptg writes only regular files (- for standard output)"},
		{name: "graph --dot a link to /dev/null", files: map[string]string{"c.toml": "[model]\nvocab = 8\n"}, setup: symlink("/dev/null", "g.dot"),
			args: []string{"graph", "c.toml", "--dot", "g.dot"}, code: 2, msg: "--dot g.dot: is a link to /dev/null, a character device; gptg writes only regular files"},
		{name: "attention --out a link that leads nowhere", setup: symlink("missing/a.png", "a.png"),
			args: []string{"attention", causalModel, "--text", "First", "--out", "a.png"}, code: 2, msg: "--out a.png: is a symbolic link that leads nowhere"},
		{name: "import --out a folder", setup: both(nanoMeta, nanoCheckpoint), files: map[string]string{"d/x": ""},
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "d"}, code: 2, msg: "--out d: exists and is a directory; gptg writes only regular files"},
		// 7. Outputs over inputs and trained models: only with --force.
		{name: "import --out the checkpoint it reads", setup: both(nanoMeta, nanoCheckpoint),
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "ckpt.pt"}, code: 2, msg: "--out ckpt.pt: is ckpt.pt, which this command reads; choose another output (--force replaces it)"},
		{name: "import --out the meta.pkl it reads", setup: both(nanoMeta, nanoCheckpoint),
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "./meta.pkl"}, code: 2, msg: "--out ./meta.pkl: is meta.pkl, which this command reads"},
		{name: "import --out a trained model", setup: both(nanoMeta, nanoCheckpoint, copied(causalModel, "model.safetensors")),
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "model.safetensors"}, code: 2, msg: "--out model.safetensors: already exists and is not a file this command wrote; choose another output, or give --force to replace it"},
		{name: "graph --dot the config it reads", files: map[string]string{"base.toml": "[model]\nvocab = 8\n"},
			args: []string{"graph", "base.toml", "--dot", "base.toml"}, code: 2, msg: "--dot base.toml: is base.toml, which this command reads"},
		{name: "data toy --out an existing file", files: map[string]string{"notes.txt": "mine"},
			args: []string{"data", "toy", "--out", "notes.txt"}, code: 2, msg: "--out notes.txt: already exists and is not a file this command wrote"},
		// 8. Nothing of the input becomes a line of its own in a script.
		{name: "sweep: out holds a newline", files: map[string]string{"c.toml": "", "s.toml": "configs = [\"c.toml\"]\nout = \"sw\\ntouch PWNED\"\n"},
			args: []string{"sweep", "s.toml"}, code: 2, msg: `sweep file s.toml: out "sw\ntouch PWNED" holds a control character: choose a plain folder name`},
		{name: "sweep emit slurm --partition with a newline", setup: smallSweep, args: []string{"sweep", "emit", "slurm", "sw", "--partition", "debug\ntouch PWNED"},
			code: 2, msg: `--partition "debug\ntouch PWNED" is not a partition name`},
		{name: "sweep emit slurm --time that is no time", setup: smallSweep, args: []string{"sweep", "emit", "slurm", "sw", "--time", "1:00 x"},
			code: 2, msg: `--time "1:00 x" is not a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED)`},
		{name: "sweep emit slurm of a folder whose name holds a newline", setup: func(t *testing.T, dir string) {
			smallSweep(t, dir)
			if err := os.Rename(filepath.Join(dir, "sw"), filepath.Join(dir, "sw\ntouch PWNED")); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"sweep", "emit", "slurm", "sw\ntouch PWNED"}, code: 2, msg: `touch PWNED" holds a space, a quote or a control character, which an #SBATCH line cannot hold`},
		{name: "sweep emit k8s --claim with a newline", setup: smallSweep, args: []string{"sweep", "emit", "k8s", "sw", "--image", "gptg:1", "--claim", "work\nkind: Pod"},
			code: 2, msg: `--claim "work\nkind: Pod" is not a Kubernetes name`},
		// 9. Finite weights so large that the forward pass overflows: an
		// error naming the cause, never NaN with exit 0.
		{name: "eval: huge weights", setup: hugeWeights, args: []string{"eval", "huge.safetensors", "--data", testmodel.TinyText()}, code: 1,
			msg: "huge.safetensors: the model's test loss came out NaN or infinite; its largest weight is 1e+300, in blocks.0.att.k.bias: the file is corrupt or its training diverged"},
		{name: "sample: huge weights", setup: hugeWeights, args: []string{"sample", "huge.safetensors", "--prompt", "First", "--tokens", "5"}, code: 1,
			msg: "huge.safetensors: the model's logits came out NaN or infinite; its largest weight is 1e+300"},
		{name: "attention: huge weights", setup: hugeWeights, args: []string{"attention", "huge.safetensors", "--text", "First"}, code: 1,
			msg: "huge.safetensors: the model's attention weights came out NaN or infinite"},
		// 10. A resumed run whose corpus changed: refused by the corpus's
		// hash and size the run recorded (#26), before any advice about
		// leaving model.vocab out, which cannot apply to a resume.
		{name: "train --resume after the corpus changed", setup: tamperedRun(nil, nil, func(dir string) {
			os.WriteFile(filepath.Join(dir, "tiny.txt"), []byte(strings.Repeat("abc cab ", 200)), 0o644)
		}), args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 2,
			msg: "tiny.txt is not the corpus run run was trained on: it has sha256 "},
		// 11. A checkpoint's state checked against itself and the config.
		{name: "train --resume: a checkpoint's step moved back by one", setup: tamperedRun(func(st map[string]any) { st["step"] = 29.0 }, nil, nil),
			args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 1, msg: "adam_steps 30 is not step 29: every step is one optimizer step"},
		{name: "train --resume: adam_steps -1", setup: tamperedRun(func(st map[string]any) { st["adam_steps"] = -1.0 }, nil, nil),
			args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 1, msg: "the checkpoint's state is inconsistent (adam_steps -1 is not step 30"},
		{name: "train --resume: step -5", setup: tamperedRun(func(st map[string]any) { st["step"] = -5.0 }, nil, nil),
			args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 1, msg: "the checkpoint's state is inconsistent (step -5 is negative)"},
		{name: "train --resume: total 5", setup: tamperedRun(func(st map[string]any) { st["total"] = 5.0 }, nil, nil),
			args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 1, msg: "(step 30 is past the run's total of 5)"},
		// 12. metrics.jsonl checked row by row on a resume.
		{name: "train --resume: a broken row in metrics.jsonl", setup: tamperedRun(nil, func(m string) string { return "{\"step\": 3, \"lo\n" + m }, nil),
			args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 1, msg: "run/metrics.jsonl: row 1 is not a metrics row"},
		{name: "train --resume: metrics.jsonl jumping to step 99999", setup: tamperedRun(nil, func(m string) string { return strings.Replace(m, `"step":30`, `"step":99999`, 1) }, nil),
			args: []string{"train", "--resume", "run", "--set", "train.max_steps=60"}, code: 1, msg: "run/metrics.jsonl: row 1 is of step 99999, after a row of step 0, in a run checkpointed at step 30"},
		// 13. Huge values are cut in messages, with their length said.
		{name: "train --set data.path of 100 KB", files: map[string]string{"c.toml": ""},
			args: []string{"train", "c.toml", "--set", "data.path=" + strings.Repeat("d", 100_000)}, code: 1,
			msg: `data file "` + strings.Repeat("d", 200) + `"… (100000 bytes): file name too long`},
		// 14. Control characters in file names are quoted, never raw.
		{name: "sample: a model name with an escape sequence", args: []string{"sample", "m\x1b[2J\x1b]0;pwned\x07.safetensors"}, code: 2,
			msg: `"m\x1b[2J\x1b]0;pwned\a.safetensors": no such model file or run folder`},
		{name: "eval: a corpus name with a newline", args: []string{"eval", causalModel, "--data", "a\nb.txt"}, code: 2,
			msg: `--data "a\nb.txt": no such file`},
		// 15. The small ones.
		{name: "train.out holding a newline", files: map[string]string{"c.toml": "[train]\nout = \"runs/a\\nb\"\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: `train.out: "runs/a\nb" holds a control character: choose a plain folder name`},
		{name: "eval --data /proc/self/status", args: []string{"eval", causalModel, "--data", "/proc/self/status"}, code: 2,
			msg: "data file /proc/self/status reports a size of 0 but holds data, as the files of /proc and /sys do; copy it into a regular file first"},
		{name: "import: model_args.n_embd the string '16'", setup: func(t *testing.T, dir string) {
			nanoMeta(t, dir)
			nanoZip(t, dir, nanoArgs(pStr("16")), pOrderedDict(), nil, false)
		}, args: importArgs, code: 2, msg: `model_args.n_embd is the string "16", not a positive integer`},
		{name: "train.epochs = 1e18", files: map[string]string{"c.toml": "[train]\nepochs = 1e18\n"},
			args: []string{"train", "c.toml"}, code: 2, msg: "train.epochs: 1e+18 is out of range (allowed: up to 1000000; train.max_steps bounds a run by steps)"},
		{name: "eval --threads -3", args: []string{"eval", causalModel, "--threads", "-3"}, code: 2,
			msg: `invalid value "-3" for flag --threads: must be 0 (every core) or a number of threads up to 4096`},
		{name: "ablate --seeds 1,-2", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--seeds", "1,-2"}, code: 2, msg: `"-2" in the list is not a positive integer seed`},
		{name: "ablate --seeds, a list of 1001", files: map[string]string{"c.toml": ""},
			args: []string{"ablate", "c.toml", "--seeds", seedList(1001)}, code: 2, msg: "a list of 1001 seeds; at most 1000"},
		{name: "sample --temperature +Inf", args: []string{"sample", causalModel, "--temperature", "+Inf"}, code: 2,
			msg: "--temperature +Inf must be a finite number ≥ 0"},
		// 5. A grid of 4·10^12 runs, counted before it is built.
		{name: "sweep: 1000 seeds × six keys of 40 values", files: map[string]string{"c.toml": "", "s.toml": hugeGrid()},
			args: []string{"sweep", "s.toml"}, code: 2, maxMB: 100, msg: "the grid has more than 100000 runs (1 configs × 40 × 40 × 40 × 40 × 40 × 40 values × 1000 seeds)"},
	}
}

// hugeWeights writes the tiny model with every weight near the largest
// its type holds (1e300 in float64, 3e38 in float32): finite, and far too
// large for any sum of products.
func hugeWeights(t *testing.T, dir string) {
	alteredModel("huge.safetensors", func(t *testing.T, f *modelfile.File) {
		for _, w := range f.Tensors {
			for i := range w.F64 {
				w.F64[i] = 1e300
			}
			for i := range w.F32 {
				w.F32[i] = 3e38
			}
		}
	})(t, dir)
}

// tamperedRun copies the causal model's finished run (30 steps) into
// dir/run, reading its corpus from dir/tiny.txt, after state has edited
// its checkpoint's state, metrics its metrics.jsonl and then more the
// folder (each may be nil).
func tamperedRun(state func(map[string]any), metrics func(string) string, more func(dir string)) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		src, run := filepath.Dir(causalModel), filepath.Join(dir, "run")
		if err := os.Mkdir(run, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(run, e.Name()))
		}
		copyFile(t, testmodel.TinyText(), filepath.Join(dir, "tiny.txt"))
		cfgPath := filepath.Join(run, "config.toml")
		b, _ := os.ReadFile(cfgPath)
		text := strings.ReplaceAll(string(b), fmt.Sprintf("%q", testmodel.TinyText()), `"tiny.txt"`)
		if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ckpt := filepath.Join(run, "checkpoint.safetensors")
		f, err := modelfile.Read(ckpt, modelfile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		// The checkpoint keeps the config it was trained with: the corpus
		// moved with the folder.
		f.Meta["config"] = strings.ReplaceAll(f.Meta["config"], fmt.Sprintf("%q", testmodel.TinyText()), `"tiny.txt"`)
		if state != nil {
			var st map[string]any
			if err := json.Unmarshal([]byte(f.Meta["state"]), &st); err != nil {
				t.Fatal(err)
			}
			state(st)
			b, _ := json.Marshal(st)
			f.Meta["state"] = string(b)
		}
		var tensors []modelfile.Tensor
		for _, n := range slices.Sorted(maps.Keys(f.Tensors)) {
			tensors = append(tensors, f.Tensors[n])
		}
		if err := modelfile.Write(ckpt, tensors, f.Meta); err != nil {
			t.Fatal(err)
		}
		if metrics != nil {
			path := filepath.Join(run, "metrics.jsonl")
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, []byte(metrics(string(b))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if more != nil {
			more(dir)
		}
	}
}

// seedList is "1,2,...,n".
func seedList(n int) string {
	var s []string
	for i := 1; i <= n; i++ {
		s = append(s, fmt.Sprint(i))
	}
	return strings.Join(s, ",")
}

// TestMessagesQuoteNames: what a command prints on stdout about a file it
// wrote quotes a name with control characters (the terminal never gets
// them raw), and no error line, whatever its input, passes 2000 bytes.
func TestMessagesQuoteNames(t *testing.T) {
	dir := t.TempDir()
	name := "t\x1b[2Jx\n.txt"
	r := gptg(t, dir, "data", "toy", "--out", name, "--sentences", "2")
	if r.code != 0 || !strings.Contains(r.stdout, `"t\x1b[2Jx\n.txt"`) || strings.ContainsAny(r.stdout, "\x1b") {
		t.Errorf("data toy --out %q: exit %d, stdout %q, stderr %s", name, r.code, r.stdout, r.stderr)
	}
	r = gptg(t, dir, "sample", strings.Repeat("m", 100_000)+".safetensors")
	if r.code != 1 || len(r.stderr) > 2100 {
		t.Errorf("sample of a 100 KB name: exit %d, %d bytes of stderr", r.code, len(r.stderr))
	}
}

// TestImportProtocol0Meta: a meta.pkl pickled with protocol 0 (its
// strings in raw-unicode-escape: the newline token is \u000a) gives the
// same model file as the protocol 2 one nanoGPT's prepare.py writes.
func TestImportProtocol0Meta(t *testing.T) {
	dir := t.TempDir()
	nanoCheckpoint(t, dir)
	nanoMeta(t, dir)
	nanoFile(t, dir, "meta-protocol0.pkl", 0)
	for _, meta := range []string{"meta.pkl", "meta-protocol0.pkl"} {
		if r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--meta", meta, "--out", meta+".safetensors"); r.code != 0 {
			t.Fatalf("import --meta %s: %s", meta, r.stderr)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "meta.pkl.safetensors"))
	b, _ := os.ReadFile(filepath.Join(dir, "meta-protocol0.pkl.safetensors"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the protocol 0 meta.pkl gives another model file (%d bytes, %d with protocol 2)", len(b), len(a))
	}
}

// symlink makes dir/name a symbolic link to target.
func symlink(target, name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOutputsGoWhereTheyAreSent: "-" and /dev/stdout are standard output
// (no file named "-", the /dev/stdout link untouched), a link to a regular
// file is written through and stays a link, a picture replaces a picture,
// and --force replaces what is otherwise kept.
func TestOutputsGoWhereTheyAreSent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.toml"), []byte("[model]\nvocab = 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	devStdout, _ := os.Readlink("/dev/stdout")
	for _, out := range []string{"-", "/dev/stdout"} {
		r := gptg(t, dir, "graph", "c.toml", "--dot", out)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "digraph") {
			t.Errorf("graph --dot %s: exit %d, stdout %.40q, stderr %s", out, r.code, r.stdout, r.stderr)
		}
		r = gptg(t, dir, "attention", causalModel, "--text", "First", "--out", out, "--format", "svg")
		if r.code != 0 || !strings.Contains(r.stdout[:min(len(r.stdout), 200)], "<svg") {
			t.Errorf("attention --out %s: exit %d, stdout %.60q, stderr %s", out, r.code, r.stdout, r.stderr)
		}
	}
	if after, _ := os.Readlink("/dev/stdout"); after != devStdout {
		t.Errorf("/dev/stdout was a link to %q, now %q", devStdout, after)
	}
	if files := listFiles(t, dir); !slices.Equal(files, []string{"c.toml"}) {
		t.Errorf("files after writing to stdout: %v", files)
	}

	// A link is written through.
	if err := os.WriteFile(filepath.Join(dir, "real.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	symlink("real.txt", "link.txt")(t, dir)
	if r := gptg(t, dir, "data", "toy", "--out", "link.txt", "--sentences", "3", "--force"); r.code != 0 {
		t.Fatalf("data toy --out link.txt --force: %s", r.stderr)
	}
	if info, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a link: %v, %v", info, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real.txt")); strings.Count(string(b), "\n") != 3 {
		t.Errorf("real.txt holds %q, want the 3 sentences written through link.txt", b)
	}

	// A picture replaces a picture; a model needs --force.
	for range 2 {
		if r := gptg(t, dir, "attention", causalModel, "--text", "First", "--out", "a.png"); r.code != 0 {
			t.Fatalf("attention --out a.png: %s", r.stderr)
		}
	}
	nanoMeta(t, dir)
	nanoCheckpoint(t, dir)
	copyFile(t, causalModel, filepath.Join(dir, "model.safetensors"))
	if r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--out", "model.safetensors"); r.code != 2 {
		t.Fatalf("import over a model without --force: exit %d, %s", r.code, r.stderr)
	}
	if r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--out", "model.safetensors", "--force"); r.code != 0 {
		t.Fatalf("import --force: %s", r.stderr)
	}
	r := gptg(t, dir, "import", "nanogpt", "ckpt.pt", "--out", "-")
	want, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if r.code != 0 || r.stdout != string(want) {
		t.Errorf("import --out -: exit %d, %d bytes on stdout, the file has %d; %s", r.code, len(r.stdout), len(want), r.stderr)
	}
}

// TestSlurmScriptRunsNothingExtra: a sweep folder named with the shell's
// metacharacters (;, >, (, &) gives a script that bash -n accepts and
// that runs gptg with the folder as one argument and nothing else; the
// sbatch --wrap command its comment suggests does the same.
func TestSlurmScriptRunsNothingExtra(t *testing.T) {
	dir := t.TempDir()
	const name = "sw;>PWNED;(>PWNED2)&|x"
	for file, text := range map[string]string{"c.toml": "", "s.toml": "configs = [\"c.toml\"]\nseeds = 2\n"} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A stand-in for gptg that writes its arguments, one per line.
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	stub := filepath.Join(bin, "gptg")
	if err := os.WriteFile(stub, []byte("#!/bin/bash\nprintf '%s\\n' \"$@\" >> \"$ARGS_FILE\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "sweep", "s.toml", "--out", name); r.code != 0 {
		t.Fatalf("sweep --out %q: %s", name, r.stderr)
	}
	if r := gptg(t, dir, "sweep", "emit", "slurm", name, "--gptg", stub, "--time", "1-02:00", "--partition", "cpu,debug"); r.code != 0 {
		t.Fatalf("sweep emit slurm: %s", r.stderr)
	}
	script := filepath.Join(dir, name, "sweep.sbatch")
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n sweep.sbatch: %v\n%s", err, out)
	}
	text, _ := os.ReadFile(script)
	abs := filepath.Join(dir, name)
	run := func(what string, args ...string) []string {
		argsFile := filepath.Join(t.TempDir(), "args")
		cmd := exec.Command("bash", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ARGS_FILE="+argsFile, "SLURM_ARRAY_TASK_ID=0", "PATH="+bin+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", what, err, out)
		}
		b, _ := os.ReadFile(argsFile)
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	if got, want := run("the script", script), []string{"sweep", "run", abs}; !slices.Equal(got, want) {
		t.Errorf("the script ran gptg with %q, want %q", got, want)
	}
	_, wrap, ok := strings.Cut(string(text), "--wrap ")
	wrap, _, _ = strings.Cut(wrap, ")\n")
	if !ok {
		t.Fatalf("no --wrap in the script:\n%s", text)
	}
	if got, want := run("the --wrap command", "-c", "set -- "+wrap+"\nexec bash -c \"$1\""), []string{"sweep", "collect", abs}; !slices.Equal(got, want) {
		t.Errorf("--wrap %s ran gptg with %q, want %q", wrap, got, want)
	}
	for _, f := range listFiles(t, dir) {
		if b := filepath.Base(f); b == "PWNED" || b == "PWNED2" {
			t.Errorf("%s was created: a command hidden in the folder's name ran", f)
		}
	}
}

// hugeGrid is a sweep file of 1000 seeds and six keys of 40 values each.
func hugeGrid() string {
	var b strings.Builder
	b.WriteString("configs = [\"c.toml\"]\nseeds = 1000\n[set]\n")
	for _, key := range []string{"train.lr", "train.weight_decay", "train.beta1", "train.beta2", "train.grad_clip", "train.epochs"} {
		var vals []string
		for i := 1; i <= 40; i++ {
			vals = append(vals, fmt.Sprintf("%g", float64(i)/1000))
		}
		fmt.Fprintf(&b, "%q = [%s]\n", key, strings.Join(vals, ", "))
	}
	return b.String()
}
