package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gptg/gptg/modelfile"
)

// The rows of this file are model files damaged or made hostile: tensors
// far larger than the metadata's model, values and words that would change
// on the way in (an F64 1e300 narrowed to float32's +Inf, a lone surrogate
// escape decoded to U+FFFD, a key given twice or unknown), tokenizer
// metadata that does not match the vocabulary, weights that are NaN or
// overflow. Each is refused in one line before it is used.

func modelFileInputs(t *testing.T) []badInput {
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
		// A run folder whose model is a FIFO: a wrong argument, as a FIFO given directly.
		{name: "sample: a run folder whose model.safetensors is a FIFO", setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(dir, "run", "model.safetensors"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"sample", "run"}, code: 2, msg: "is a named pipe (FIFO), not a model file: the run folder run is damaged"},
		{name: "sample: a char vocabulary holding bytes that are not UTF-8", setup: func(t *testing.T, dir string) {
			notUTF8(causalModel, "m.safetensors", `\"a\"`)(t, dir)
		}, args: []string{"sample", "m.safetensors"}, code: 1, msg: "header is not valid UTF-8"},
		// Damaged tokenizer metadata of translation models: refused, never
		// a translation with its words shifted.
		{name: "translate: a source word the tokenizer never makes", files: tr, setup: translationWords("t.safetensors", "src_vocab", func(w []string) []string {
			return append(append([]string{}, w[:4]...), append([]string{"A1"}, w[5:]...)...)
		}), args: []string{"translate", "t.safetensors", "--text", "a1 a2"}, code: 1, msg: `metadata "src_vocab": word 4, "A1", is not one the tokenizer makes`},
		{name: "translate: a target word holding a space", files: tr, setup: translationWords("t.safetensors", "tgt_vocab", func(w []string) []string {
			return append(append([]string{}, w[:4]...), append([]string{"b1 b2"}, w[5:]...)...)
		}), args: []string{"translate", "t.safetensors", "--text", "a1 a2"}, code: 1, msg: `metadata "tgt_vocab": word 4, "b1 b2", is not one the tokenizer makes`},
		{name: "translate: a vocabulary holding bytes that are not UTF-8", files: tr, setup: func(t *testing.T, dir string) {
			translationRun(t, dir)
			notUTF8("runs/toy/model.safetensors", "t.safetensors", `a1\"`)(t, dir)
		}, args: []string{"translate", "t.safetensors", "--text", "a1 a2"}, code: 1, msg: "header is not valid UTF-8"},
		{name: "translate: tokenizer char in a translation model", files: tr, setup: translationMeta("t.safetensors", "tokenizer", func(string) string { return "char" }),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: `metadata "tokenizer": "char": a translation model's vocabularies are of words`},
		{name: "translate: max_target past the model's positions", files: tr, setup: translationMeta("t.safetensors", "max_target", func(string) string { return "100" }),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: `metadata "max_target": 100 words and EOS do not fit the model's 5 positions`},
		{name: "translate: metadata of embedding 1000000", files: tr, setup: translationModelField("t.safetensors", "embedding", 1000000),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, maxMB: 300, msg: "model.embedding: 1000000 is out of range"},
		{name: "translate: metadata of embedding 16 over tensors of 8", files: tr, setup: translationModelField("t.safetensors", "embedding", 16),
			args: []string{"translate", "t.safetensors", "--text", "a1"}, code: 1, msg: "has shape [16 8], the metadata's model needs [16 16]"},
		// Weights that would print garbage with exit 0.
		{name: "translate: NaN weights", files: translationFiles(), setup: translationModelAs("nan.safetensors", float32(math.NaN())),
			args: []string{"translate", "nan.safetensors", "--text", "a1 a2"}, code: 1, msg: "holds NaN at entry 0"},
		{name: "translate: huge weights", files: translationFiles(), setup: translationModelAs("huge.safetensors", 3e38),
			args: []string{"translate", "huge.safetensors", "--text", "a1 a2", "--beam", "2"}, code: 1, msg: "the model's translation scores (log p) came out NaN or infinite; its largest weight is 3"},
		{name: "eval a translation model: huge weights", files: translationFiles(), setup: func(t *testing.T, dir string) {
			translationModelAs("runs/toy/huge.safetensors", 3e38)(t, dir)
		}, args: []string{"eval", "runs/toy/huge.safetensors"}, code: 1, msg: "the model's test loss came out NaN or infinite"},
	}
}

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

// translationModelAs writes the translation run's model with every
// weight set to v as dir/name.
func translationModelAs(name string, v float32) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		translationRun(t, dir)
		f, err := modelfile.Read(filepath.Join(dir, "runs/toy/model.safetensors"), modelfile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var tensors []modelfile.Tensor
		for _, n := range slices.Sorted(maps.Keys(f.Tensors)) {
			w := f.Tensors[n]
			for i := range w.F32 {
				w.F32[i] = v
			}
			for i := range w.F64 {
				w.F64[i] = float64(v)
			}
			tensors = append(tensors, w)
		}
		if err := modelfile.Write(filepath.Join(dir, name), tensors, f.Meta); err != nil {
			t.Fatal(err)
		}
	}
}

// translationMeta writes the translation run's model as dir/name with its
// metadata key replaced by change(old value).
func translationMeta(name, key string, change func(string) string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		translationRun(t, dir)
		f, err := modelfile.Read(filepath.Join(dir, "runs/toy/model.safetensors"), modelfile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f.Meta[key] = change(f.Meta[key])
		var tensors []modelfile.Tensor
		for _, w := range f.Tensors {
			tensors = append(tensors, w)
		}
		if err := modelfile.Write(filepath.Join(dir, name), tensors, f.Meta); err != nil {
			t.Fatal(err)
		}
	}
}

// translationWords is translationMeta of a vocabulary's word list.
func translationWords(name, key string, change func([]string) []string) func(t *testing.T, dir string) {
	return translationMeta(name, key, func(v string) string {
		var words []string
		if err := json.Unmarshal([]byte(v), &words); err != nil {
			panic(err)
		}
		b, _ := json.Marshal(change(words))
		return string(b)
	})
}

// translationModelEdit writes the model with its embedding set to e in the
// metadata only.
func translationModelField(name, field string, value any) func(t *testing.T, dir string) {
	return translationMeta(name, "model", func(v string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			panic(err)
		}
		m[field] = value
		b, _ := json.Marshal(m)
		return string(b)
	})
}

// notUTF8 rewrites the first occurrence of old in dir/src's header (same
// length) as bytes that are not UTF-8, into dir/dst.
func notUTF8(src, dst, old string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte(old))
		if i < 0 {
			t.Fatalf("%q not in %s", old, src)
		}
		bad := bytes.Repeat([]byte{0xff}, len(old))
		b = append(append(append([]byte(nil), b[:i]...), bad...), b[i+len(old):]...)
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
