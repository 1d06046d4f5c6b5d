package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/modelfile"
)

// The rows of this file are round six of hostile input (issue #24), lane
// hfiles: model files and imports (the probes are
// testdata/hostile/probes_hfiles.py). A model file whose tensors are far
// larger than its metadata's model is refused before they are read; values
// and words that would change on the way in (an F64 1e300 narrowed to
// float32's +Inf, a lone surrogate escape decoded to U+FFFD, a key given
// twice or unknown in a translation model's table) are refused; a
// checkpoint entry whose CRC is wrong is not imported.

// rawHeader reads a model file's header as generic JSON and its data.
func rawHeader(t *testing.T, path string) (map[string]any, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var h map[string]any
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	return h, b[8+n:]
}

// writeRaw writes header and data as a model file, the file extended to
// size bytes (a hole: no disk) when size is larger.
func writeRaw(t *testing.T, path string, h map[string]any, data []byte, size int64) {
	t.Helper()
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(hb)))
	buf.Write(hb)
	buf.Write(data)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if size > int64(buf.Len()) {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
}

// sparseExtra writes src as dst with one more F32 tensor of n values whose
// bytes are a hole in the file: a 1.8 GB model file that costs no disk.
func sparseExtra(src, dst string, n int64) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		h, data := rawHeader(t, src)
		at := int64(len(data))
		h["junk"] = map[string]any{"dtype": "F32", "shape": []int64{n}, "data_offsets": []int64{at, at + 4*n}}
		hb, _ := json.Marshal(h)
		writeRaw(t, filepath.Join(dir, dst), h, data, 8+int64(len(hb)+(8-len(hb)%8)%8)+at+4*n)
	}
}

// narrowOverflow writes the tiny model as a float32 model whose pos.weight
// is F64 with its last value 1e300: finite in the file, +Inf in the model.
func narrowOverflow(t *testing.T, dir string) {
	f, err := modelfile.Read(causalModel, modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal([]byte(f.Meta["model"]), &spec); err != nil {
		t.Fatal(err)
	}
	spec["dtype"] = "float32"
	b, _ := json.Marshal(spec)
	f.Meta["model"] = string(b)
	var tensors []modelfile.Tensor
	for _, name := range f.Order {
		w := f.Tensors[name]
		values := w.F64
		if values == nil {
			for _, v := range w.F32 {
				values = append(values, float64(v))
			}
		}
		w.F32, w.F64 = nil, nil
		if name == "pos.weight" {
			w.F64 = append([]float64(nil), values...)
			w.F64[len(w.F64)-1] = 1e300
		} else {
			w.F32 = make([]float32, len(values))
			for i, v := range values {
				w.F32[i] = float32(v)
			}
		}
		tensors = append(tensors, w)
	}
	if err := modelfile.Write(filepath.Join(dir, "m.safetensors"), tensors, f.Meta); err != nil {
		t.Fatal(err)
	}
}

// badCRC copies the nanoGPT checkpoint with one byte of a storage flipped,
// its CRC left as it was.
func badCRC(t *testing.T, dir string) {
	nanoCheckpoint(t, dir)
	nanoMeta(t, dir)
	p := filepath.Join(dir, "ckpt.pt")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	name := []byte("ckpt/data/0")
	for at := 0; ; at++ {
		i := bytes.Index(b[at:], name)
		if i < 0 {
			t.Fatal("no local header of ckpt/data/0")
		}
		at += i
		if at >= 30 && string(b[at-30:at-26]) == "PK\x03\x04" && binary.LittleEndian.Uint16(b[at-4:]) == uint16(len(name)) {
			extra := int(binary.LittleEndian.Uint16(b[at-2:]))
			b[at+len(name)+extra] ^= 1
			break
		}
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func round6HfilesInputs(t *testing.T) []badInput {
	tr := translationFiles()
	const big = 480_000_000 // F32 values: 1.8 GiB, under the 2 GiB file limit
	withMeta := func(key string, change func(string) string) func(t *testing.T, dir string) {
		return alteredModel("m.safetensors", func(t *testing.T, f *modelfile.File) { f.Meta[key] = change(f.Meta[key]) })
	}
	return []badInput{
		// Memory: tensors far beyond the metadata's model, refused unread.
		{name: "sample: a model file with a 1.8 GB tensor it does not need (sparse)", setup: sparseExtra(causalModel, "m.safetensors", big),
			args: []string{"sample", "m.safetensors", "--tokens", "2"}, code: 1, maxMB: 300, msg: "bytes, more than the 78328 that the 1599 parameters of the model its metadata describes can take: the file is damaged"},
		{name: "translate: a model file with a 1.8 GB tensor it does not need (sparse)", files: tr, setup: func(t *testing.T, dir string) {
			translationRun(t, dir)
			sparseExtra("runs/toy/model.safetensors", "t.safetensors", big)(t, dir)
		}, args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, maxMB: 300, msg: "parameters of the model its metadata describes can take: the file is damaged"},

		{name: "translate: a model file with a tensor its model does not have", files: tr, setup: func(t *testing.T, dir string) {
			translationRun(t, dir)
			h, data := rawHeader(t, filepath.Join(dir, "runs/toy/model.safetensors"))
			at := int64(len(data))
			h["encoder.0.att.extra.weight"] = map[string]any{"dtype": "F32", "shape": []int64{1}, "data_offsets": []int64{at, at + 4}}
			writeRaw(t, filepath.Join(dir, "t.safetensors"), h, append(data, 0, 0, 0, 0), 0)
		}, args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: "tensors that this model (its metadata) does not have: encoder.0.att.extra.weight"},

		// Values and words that would change on the way in.
		{name: "sample: an F64 1e300 in a float32 model (+Inf once narrowed)", setup: narrowOverflow,
			args: []string{"sample", "m.safetensors", "--tokens", "2", "--prompt", "F"}, code: 1, msg: "tensor pos.weight holds 1e+300 at entry 63, beyond the range of the model's float32"},
		{name: "sample: a vocabulary with a lone surrogate escape (U+FFFD once decoded)", setup: withMeta("vocab", func(v string) string {
			return strings.Replace(v, `"z"`, `"\ud800"`, 1)
		}), args: []string{"sample", "m.safetensors", "--tokens", "2"}, code: 1, msg: `metadata "vocab" is not a JSON array of strings: the escape \ud800 at byte`},
		{name: "sample: model metadata followed by a second JSON value", setup: withMeta("model", func(v string) string { return v + ` {"heads":1}` }),
			args: []string{"sample", "m.safetensors", "--tokens", "2"}, code: 1, msg: `metadata "model": more than one JSON value`},
		{name: "translate: the model table with heads twice (2, then 4)", files: tr, setup: translationMeta("t.safetensors", "model", func(v string) string {
			return strings.TrimSuffix(v, "}") + `,"heads":4}`
		}), args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: `metadata "model": key "heads" appears twice`},
		{name: "translate: the model table with an unknown key", files: tr, setup: translationMeta("t.safetensors", "model", func(v string) string {
			return strings.TrimSuffix(v, "}") + `,"turbo":true}`
		}), args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: `metadata "model": json: unknown field "turbo"`},

		// Imports: a damaged storage is not imported.
		{name: "import: a storage whose CRC is wrong", setup: badCRC,
			args: []string{"import", "nanogpt", "ckpt.pt", "--out", "m.safetensors"}, code: 2, msg: "zip: checksum error: the entry's 3520 bytes are damaged"},

		// A run folder whose model is a FIFO: a wrong argument, as a FIFO given directly.
		{name: "sample: a run folder whose model.safetensors is a FIFO", setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(dir, "run", "model.safetensors"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"sample", "run"}, code: 2, msg: "is a named pipe (FIFO), not a model file: the run folder run is damaged"},
	}
}
