package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The rows and tests of this file are the third round of hostile input
// (issue #24): a nanoGPT import that hung or took all memory, outputs
// written through devices, links and inputs, scripts with injected lines,
// results that lied, and messages that echoed whatever they were given.

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

// hostileInputs are the rows of TestBadInputs for issue #24.
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
		// 5. A grid of 4·10^12 runs, counted before it is built.
		{name: "sweep: 1000 seeds × six keys of 40 values", files: map[string]string{"c.toml": "", "s.toml": hugeGrid()},
			args: []string{"sweep", "s.toml"}, code: 2, maxMB: 100, msg: "the grid has more than 100000 runs (1 configs × 40 × 40 × 40 × 40 × 40 × 40 values × 1000 seeds)"},
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
