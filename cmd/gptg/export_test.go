package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/internal/testmodel"
	"github.com/gptg/gptg/modelfile"
)

// TestExportBF16: export --dtype bfloat16 writes every tensor as BF16
// (half the bytes), each weight the float32's nearest bfloat16 (within half
// a unit of bfloat16's 8-bit significand: 2⁻⁸ of it relatively; the exact
// rounding is modelfile's TestBF16RoundingMatchesPyTorch); sample, eval
// and inspect read the file, eval's loss near the float32 model's; export
// --dtype float32 widens it back bit for bit, and --force replaces an
// existing output.
func TestExportBF16(t *testing.T) {
	dir := t.TempDir()
	float32Model(t, dir, "m.safetensors")
	out := ok(t, dir, "export", "m.safetensors", "--dtype", "bfloat16", "--out", "b.safetensors")
	if !strings.HasPrefix(out, "wrote b.safetensors: ") || !strings.Contains(out, "in bfloat16") {
		t.Errorf("export said %q", out)
	}
	orig, err := modelfile.Read(filepath.Join(dir, "m.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	half, err := modelfile.Read(filepath.Join(dir, "b.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "b.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	params := 0
	for name, a := range orig.Tensors {
		b := half.Tensors[name]
		if len(b.F32) != len(a.F32) || len(a.F32) == 0 {
			t.Fatalf("%s: %d float32 values, exported %d", name, len(a.F32), len(b.F32))
		}
		params += len(a.F32)
		for i, x := range a.F32 {
			y := b.F32[i]
			if math.Float32bits(y)&0xffff != 0 || math.Abs(float64(y-x)) > math.Abs(float64(x))/256 {
				t.Errorf("%s[%d]: %g exported as %g (bits %08x), not a bfloat16 within 2⁻⁸ of it", name, i, x, y, math.Float32bits(y))
				break
			}
		}
	}
	if got := strings.Count(string(raw), `"dtype":"BF16"`); got != len(orig.Tensors) {
		t.Errorf("%d of %d tensors are BF16 in the header", got, len(orig.Tensors))
	}
	if data := uint64(len(raw)) - 8 - binary.LittleEndian.Uint64(raw); data != uint64(2*params) {
		t.Errorf("the bfloat16 file holds %d bytes of tensor data, want 2 a parameter (%d)", data, 2*params)
	}

	loss := func(model string) float64 {
		out := ok(t, dir, "eval", model, "--data", testmodel.TinyText())
		for line := range strings.Lines(out) {
			if v, found := strings.CutPrefix(strings.TrimSpace(line), "test loss "); found {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
		}
		t.Fatalf("eval printed no test loss:\n%s", out)
		return 0
	}
	full, rounded := loss("m.safetensors"), loss("b.safetensors")
	t.Logf("test loss: float32 %.6f, bfloat16 export %.6f", full, rounded)
	if math.Abs(full-rounded) > 0.02 {
		t.Errorf("test loss %.6f of the float32 model, %.6f of its bfloat16 export: more than 0.02 apart", full, rounded)
	}
	ok(t, dir, "sample", "b.safetensors", "--tokens", "5")
	// inspect says how each file stores its weights: the metadata of the
	// export is the float32 model's, unchanged.
	stored := fmt.Sprintf("all %d tensors, %d values", len(orig.Tensors), params)
	inspectSays(t, dir, "m.safetensors", "F32: "+stored)
	inspectSays(t, dir, "b.safetensors", "BF16: "+stored+"; widened to float32 as read")

	ok(t, dir, "export", "b.safetensors", "--dtype", "float32", "--out", "w.safetensors")
	wide, err := modelfile.Read(filepath.Join(dir, "w.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range half.Tensors {
		for i, y := range b.F32 {
			if w := wide.Tensors[name].F32[i]; math.Float32bits(w) != math.Float32bits(y) {
				t.Fatalf("%s[%d]: bfloat16 %g widened to %g", name, i, y, w)
			}
		}
	}
	inspectSays(t, dir, "w.safetensors", "F32: "+stored)
	if got := loss("w.safetensors"); got != rounded {
		t.Errorf("test loss %.6f of the widened file, %.6f of the bfloat16 one: the same weights", got, rounded)
	}

	if err := os.WriteFile(filepath.Join(dir, "old.safetensors"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "export", "m.safetensors", "--dtype", "bfloat16", "--out", "old.safetensors", "--force")
	if again, _ := os.ReadFile(filepath.Join(dir, "old.safetensors")); string(again) != string(raw) {
		t.Error("export --force wrote other bytes than the first export")
	}
}

// inspectSays fails t unless gptg inspect model's first line is the
// file's name and stored, how it stores its weights.
func inspectSays(t *testing.T, dir, model, stored string) {
	t.Helper()
	want := "file: " + model + " (weights stored as " + stored + ")\n"
	if out := ok(t, dir, "inspect", model); !strings.HasPrefix(out, want) {
		t.Errorf("inspect %s does not start with\n%s\n---\n%s", model, want, out)
	}
}

// float32Model writes the tiny causal model (float64) as a float32 model,
// each weight narrowed: the model export takes.
func float32Model(t *testing.T, dir, name string) {
	t.Helper()
	alteredModel(name, func(t *testing.T, f *modelfile.File) {
		for n, tn := range f.Tensors {
			tn.F32 = make([]float32, len(tn.F64))
			for i, v := range tn.F64 {
				tn.F32[i] = float32(v)
			}
			tn.F64 = nil
			f.Tensors[n] = tn
		}
		if !strings.Contains(f.Meta["model"], `"dtype":"float64"`) {
			t.Fatalf("the tiny model's metadata names no float64 dtype: %s", f.Meta["model"])
		}
		f.Meta["model"] = strings.Replace(f.Meta["model"], `"dtype":"float64"`, `"dtype":"float32"`, 1)
	})(t, dir)
}

// TestExportTranslation: an encoder–decoder model exports too, and
// translate reads the bfloat16 file.
func TestExportTranslation(t *testing.T) {
	dir := t.TempDir()
	for name, text := range translationFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	translationRun(t, dir)
	ok(t, dir, "export", "runs/toy", "--dtype", "bfloat16", "--out", "t.safetensors")
	raw, err := os.ReadFile(filepath.Join(dir, "t.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"F32"`) || !strings.Contains(string(raw), `"BF16"`) {
		t.Error("the exported translation model is not all BF16")
	}
	half, err := modelfile.Read(filepath.Join(dir, "t.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	params := 0
	for _, tn := range half.Tensors {
		params += len(tn.F32)
	}
	inspectSays(t, dir, "runs/toy/model.safetensors", fmt.Sprintf("F32: all %d tensors, %d values", len(half.Tensors), params))
	inspectSays(t, dir, "t.safetensors", fmt.Sprintf("BF16: all %d tensors, %d values; widened to float32 as read", len(half.Tensors), params))
	if out := ok(t, dir, "translate", "t.safetensors", "--text", "a1"); strings.TrimSpace(out) == "" {
		t.Error("translate of the bfloat16 file printed nothing")
	}
}

// TestInspectStoredDtypes: inspect of the tiny float64 model says F64, and
// of a file mixing dtypes counts the tensors and values of each (the
// counts from the file as modelfile reads it).
func TestInspectStoredDtypes(t *testing.T) {
	dir := t.TempDir()
	f, err := modelfile.Read(causalModel, modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	values, tok := 0, len(f.Tensors["tok.weight"].F64)
	for _, tn := range f.Tensors {
		values += len(tn.F64)
	}
	if tok == 0 || values <= tok {
		t.Fatalf("the tiny model holds %d float64 values, %d of them tok.weight's", values, tok)
	}
	copyFile(t, causalModel, filepath.Join(dir, "m.safetensors"))
	inspectSays(t, dir, "m.safetensors", fmt.Sprintf("F64: all %d tensors, %d values", len(f.Tensors), values))
	alteredModel("mixed.safetensors", func(t *testing.T, f *modelfile.File) {
		tn := f.Tensors["tok.weight"]
		tn.F32 = make([]float32, len(tn.F64))
		for i, v := range tn.F64 {
			tn.F32[i] = float32(v)
		}
		tn.F64 = nil
		f.Tensors["tok.weight"] = tn
	})(t, dir)
	inspectSays(t, dir, "mixed.safetensors", fmt.Sprintf("F32: 1 tensor, %d values; F64: %d tensors, %d values", tok, len(f.Tensors)-1, values-tok))
}

// exportInputs are export's refusals, for TestBadInputs.
func exportInputs(t *testing.T) []badInput {
	model := causalModel // a float64 model
	return []badInput{
		{name: "export to an existing file without --force", files: map[string]string{"b.safetensors": "mine"},
			args: []string{"export", model, "--dtype", "bfloat16", "--out", "b.safetensors"}, code: 2, msg: "--out b.safetensors: already exists and is not a file this command wrote; choose another output, or give --force to replace it"},
		{name: "export --dtype float16", args: []string{"export", model, "--dtype", "float16", "--out", "b.safetensors"}, code: 2, msg: `--dtype "float16": export writes bfloat16 or float32`},
		{name: "export without --dtype", args: []string{"export", model, "--out", "b.safetensors"}, code: 2, msg: "export needs --dtype bfloat16 (or float32)"},
		{name: "export without --out", args: []string{"export", model, "--dtype", "bfloat16"}, code: 2, msg: "export needs --out FILE"},
		{name: "export a missing model", args: []string{"export", "nope.safetensors", "--dtype", "bfloat16", "--out", "b.safetensors"}, code: 2, msg: "nope.safetensors: no such model file or run folder"},
		{name: "export a config", files: map[string]string{"c.toml": "[train]\nout = \"runs/c\"\n"},
			args: []string{"export", "c.toml", "--dtype", "bfloat16", "--out", "b.safetensors"}, code: 2, msg: "c.toml is a config, not a model"},
		{name: "export a float64 model", args: []string{"export", model, "--dtype", "bfloat16", "--out", "b.safetensors"}, code: 2,
			msg: "model.safetensors is a float64 model: export takes float32 and bfloat16 models"},
		{name: "export a truncated model", setup: func(t *testing.T, dir string) {
			float32Model(t, dir, "whole.safetensors")
			b, err := os.ReadFile(filepath.Join(dir, "whole.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "m.safetensors"), b[:len(b)-10], 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, "whole.safetensors"))
		},
			args: []string{"export", "m.safetensors", "--dtype", "bfloat16", "--out", "b.safetensors"}, code: 1, msg: "the file is truncated or its header is wrong"},
		{name: "export over its own input, without --force", setup: func(t *testing.T, dir string) { float32Model(t, dir, "m.safetensors") },
			args: []string{"export", "m.safetensors", "--dtype", "bfloat16", "--out", "m.safetensors"}, code: 2, msg: "--out m.safetensors: is m.safetensors, which this command reads; choose another output (--force replaces it)"},
	}
}
