package hf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stEntry is one tensor of a safetensors file a test writes: its raw
// little-endian bytes.
type stEntry struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// folder is a Hugging Face GPT-2 folder a test builds and then breaks.
type folder struct {
	config  map[string]any
	tensors []stEntry
	// header, when set, rewrites the safetensors header's JSON before it
	// is written (a header that lies about the data).
	header func(map[string]any)
	// cut drops so many bytes off the end of model.safetensors.
	cut int
}

// tinyFolder is a GPT-2 of 2 layers, 2 heads, embedding 8, context 4 and
// 11 tokens, F32, in the Hub's layout with the attn.bias buffers, random
// weights of seed.
func tinyFolder(seed uint64) *folder {
	const L, C, T, V = 2, 8, 4, 11
	f := &folder{config: map[string]any{
		"model_type": "gpt2", "architectures": []string{"GPT2LMHeadModel"}, "activation_function": "gelu_new",
		"n_layer": L, "n_head": 2, "n_embd": C, "n_positions": T, "n_ctx": T, "vocab_size": V,
		"layer_norm_epsilon": 1e-5, "attn_pdrop": 0.1, "embd_pdrop": 0.1, "resid_pdrop": 0.1,
		"bos_token_id": 10, "eos_token_id": 10, "initializer_range": 0.02, "summary_type": "cls_index",
	}}
	rng := rand.New(rand.NewPCG(seed, 1))
	add := func(name string, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		f.tensors = append(f.tensors, f32Entry(name, shape, v))
	}
	add("wte.weight", V, C)
	add("wpe.weight", T, C)
	mask := make([]float32, T*T)
	for i := range T {
		for j := 0; j <= i; j++ {
			mask[i*T+j] = 1
		}
	}
	for i := range L {
		h := fmt.Sprintf("h.%d.", i)
		f.tensors = append(f.tensors, f32Entry(h+"attn.bias", []int{1, 1, T, T}, mask))
		add(h+"ln_1.weight", C)
		add(h+"ln_1.bias", C)
		add(h+"attn.c_attn.weight", C, 3*C)
		add(h+"attn.c_attn.bias", 3*C)
		add(h+"attn.c_proj.weight", C, C)
		add(h+"attn.c_proj.bias", C)
		add(h+"ln_2.weight", C)
		add(h+"ln_2.bias", C)
		add(h+"mlp.c_fc.weight", C, 4*C)
		add(h+"mlp.c_fc.bias", 4*C)
		add(h+"mlp.c_proj.weight", 4*C, C)
		add(h+"mlp.c_proj.bias", C)
	}
	add("ln_f.weight", C)
	add("ln_f.bias", C)
	return f
}

func f32Entry(name string, shape []int, v []float32) stEntry {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return stEntry{name: name, dtype: "F32", shape: shape, data: b}
}

func (f *folder) find(name string) int {
	for i, e := range f.tensors {
		if e.name == name {
			return i
		}
	}
	panic("no tensor " + name)
}

func (f *folder) remove(name string) {
	i := f.find(name)
	f.tensors = slices.Delete(f.tensors, i, i+1)
}

// write writes config.json and model.safetensors into a new folder.
func (f *folder) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := json.Marshal(f.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, e := range f.tensors {
		header[e.name] = map[string]any{"dtype": e.dtype, "shape": e.shape, "data_offsets": []int{len(data), len(data) + len(e.data)}}
		data = append(data, e.data...)
	}
	if f.header != nil {
		f.header(header)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	file = append(append(file, h...), data...)
	file = file[:len(file)-f.cut]
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImportTinyFolder(t *testing.T) {
	f := tinyFolder(1)
	m, err := Import(f.write(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Spec
	if s.Vocab != 11 || s.Context != 4 || s.Embedding != 8 || s.Blocks != 2 || s.Heads != 2 || s.Activation != "gelu" ||
		!s.TieEmbeddings || !s.FinalNorm || !s.Bias || s.Norm != "pre" || !s.Mask || s.Dropout != 0.1 || s.FFMult != 4 {
		t.Errorf("spec %+v", s)
	}
	// 2 embeddings, per block 2 norms × 2 + 6 linears × 2, the final norm × 2.
	if len(m.Tensors) != 2+2*16+2 {
		t.Errorf("%d tensors", len(m.Tensors))
	}
	// Conv1D (in, out) becomes (out, in): q is the first C columns of
	// c_attn, v the last; the bias is cut the same way.
	raw := floats(f.tensors[f.find("h.1.attn.c_attn.weight")].data)
	rawBias := floats(f.tensors[f.find("h.1.attn.c_attn.bias")].data)
	got := map[string][]float32{}
	for _, x := range m.Tensors {
		got[x.Name] = x.F32
	}
	const C = 8
	for o := range C {
		for i := range C {
			if q, v := got["blocks.1.att.q.weight"][o*C+i], got["blocks.1.att.v.weight"][o*C+i]; q != raw[i*3*C+o] || v != raw[i*3*C+2*C+o] {
				t.Fatalf("q or v weight (%d, %d) is not c_attn's (%d, %d) transposed", o, i, i, o)
			}
		}
		if got["blocks.1.att.k.bias"][o] != rawBias[C+o] {
			t.Fatalf("k bias %d is not c_attn.bias %d", o, C+o)
		}
	}
	fc := floats(f.tensors[f.find("h.0.mlp.c_proj.weight")].data) // (4C, C)
	if down := got["blocks.0.ff.down.weight"]; down[3*4*C+17] != fc[17*C+3] {
		t.Error("ff.down is not mlp.c_proj transposed")
	}
}

func floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestImportLayouts: the prefix transformer., no mask buffers, an
// lm_head.weight equal to wte.weight and the older masked_bias scalar
// all give the same model as the Hub's layout.
func TestImportLayouts(t *testing.T) {
	base, err := Import(tinyFolder(1).write(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]func(f *folder){
		"save_pretrained": func(f *folder) {
			var kept []stEntry
			for _, e := range f.tensors {
				if !strings.HasSuffix(e.name, ".attn.bias") {
					e.name = "transformer." + e.name
					kept = append(kept, e)
				}
			}
			f.tensors = kept
		},
		"lm_head kept": func(f *folder) {
			e := f.tensors[f.find("wte.weight")]
			e.name = "lm_head.weight"
			f.tensors = append(f.tensors, e)
		},
		"masked_bias": func(f *folder) {
			f.tensors = append(f.tensors, f32Entry("h.0.attn.masked_bias", []int{}, []float32{-1e4}),
				f32Entry("h.1.attn.masked_bias", []int{}, []float32{-1e4}))
		},
		"gelu_pytorch_tanh, n_inner null": func(f *folder) {
			f.config["activation_function"] = "gelu_pytorch_tanh"
			f.config["n_inner"] = nil
			f.config["scale_attn_weights"] = true
			f.config["reorder_and_upcast_attn"] = false
		},
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			f := tinyFolder(1)
			change(f)
			m, err := Import(f.write(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			if m.Spec != base.Spec || len(m.Tensors) != len(base.Tensors) {
				t.Fatalf("spec %+v, %d tensors; want %+v, %d", m.Spec, len(m.Tensors), base.Spec, len(base.Tensors))
			}
			for i, x := range m.Tensors {
				if y := base.Tensors[i]; x.Name != y.Name || !slices.Equal(x.F32, y.F32) {
					t.Fatalf("tensor %s differs", x.Name)
				}
			}
		})
	}
}

// TestImportHalfPrecision: F16 and BF16 files holding the same values as
// an F32 one (values each dtype represents exactly) import to the same
// float32 weights.
func TestImportHalfPrecision(t *testing.T) {
	for _, dtype := range []string{"F16", "BF16"} {
		t.Run(dtype, func(t *testing.T) {
			wide, narrow := tinyFolder(2), tinyFolder(2)
			for i, e := range wide.tensors {
				v := floats(e.data)
				b := make([]byte, 2*len(v))
				for j, x := range v {
					var h uint16
					if dtype == "BF16" {
						h = uint16(math.Float32bits(x) >> 16)
					} else {
						h = toHalf(x)
					}
					binary.LittleEndian.PutUint16(b[2*j:], h)
					v[j] = decodeHalf(dtype, h)
				}
				wide.tensors[i] = f32Entry(e.name, e.shape, v)
				narrow.tensors[i] = stEntry{name: e.name, dtype: dtype, shape: e.shape, data: b}
			}
			a, err := Import(wide.write(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Import(narrow.write(t), 1)
			if err != nil {
				t.Fatal(err)
			}
			for i := range a.Tensors {
				if !slices.Equal(a.Tensors[i].F32, b.Tensors[i].F32) {
					t.Fatalf("%s differs between the F32 and the %s file", a.Tensors[i].Name, dtype)
				}
			}
			if !slices.ContainsFunc(b.Notes, func(n string) bool { return strings.Contains(n, dtype+" weights converted") }) {
				t.Errorf("notes %q do not say the %s weights were converted", b.Notes, dtype)
			}
		})
	}
}

func decodeHalf(dtype string, h uint16) float32 {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], h)
	return float32(decode(dtype, b[:]))
}

// toHalf rounds x (of normal magnitude, |x| < 65504) to the nearest half
// by truncation of the mantissa: the test needs a half, not the nearest.
func toHalf(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	if exp <= 0 {
		return sign // flush to zero
	}
	return sign | uint16(exp)<<10 | uint16(b>>13&0x3ff)
}

func TestHalfToFloat32(t *testing.T) {
	for h, want := range map[uint16]float32{
		0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 1.0 / (1 << 24), 0x03ff: 1023.0 / (1 << 24),
		0x0400: 1.0 / (1 << 14), 0x3555: 0.333251953125, 0x8000: float32(math.Copysign(0, -1)),
		0x7c00: float32(math.Inf(1)), 0xfc00: float32(math.Inf(-1)),
	} {
		if got := halfToFloat32(h); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("half %#04x: got %v, want %v", h, got, want)
		}
	}
	if got := halfToFloat32(0x7e00); !math.IsNaN(float64(got)) {
		t.Errorf("half 0x7e00: got %v, want NaN", got)
	}
}

// TestImportRefuses: every way a folder can be wrong gives an InputError
// of one line naming the key or tensor.
func TestImportRefuses(t *testing.T) {
	cases := []struct {
		name   string
		change func(f *folder)
		msg    string
	}{
		{"another architecture", func(f *folder) { f.config["model_type"] = "llama" }, `model_type is "\"llama\"", not "gpt2"`},
		{"no model_type", func(f *folder) { delete(f.config, "model_type") }, "no model_type"},
		{"another head", func(f *folder) { f.config["architectures"] = []string{"GPT2ForSequenceClassification"} }, "GPT2ForSequenceClassification"},
		{"no n_layer", func(f *folder) { delete(f.config, "n_layer") }, "no n_layer"},
		{"n_head a string", func(f *folder) { f.config["n_head"] = "2" }, "n_head is"},
		{"eps", func(f *folder) { f.config["layer_norm_epsilon"] = 1e-6 }, "layer_norm_epsilon is 1e-06"},
		{"activation", func(f *folder) { f.config["activation_function"] = "gelu_fast" }, `activation_function is "gelu_fast"`},
		{"unscaled attention", func(f *folder) { f.config["scale_attn_weights"] = false }, "scale_attn_weights is false"},
		{"layer-scaled attention", func(f *folder) { f.config["scale_attn_by_inverse_layer_idx"] = true }, "scale_attn_by_inverse_layer_idx is true"},
		{"cross-attention", func(f *folder) { f.config["add_cross_attention"] = true }, "add_cross_attention is true"},
		{"unknown key", func(f *folder) { f.config["rotary_dim"] = 4 }, `"rotary_dim" is a setting gptg does not know`},
		{"n_ctx differs", func(f *folder) { f.config["n_ctx"] = 8 }, "n_ctx is"},
		{"n_inner odd", func(f *folder) { f.config["n_inner"] = 12 }, "n_inner 12 is not a multiple"},
		{"dropouts differ", func(f *folder) { f.config["attn_pdrop"] = 0.2 }, "one dropout rate"},
		{"pruned heads", func(f *folder) { f.config["pruned_heads"] = map[string][]int{"0": {1}} }, "pruned_heads"},
		{"missing tensor", func(f *folder) { f.remove("h.1.mlp.c_fc.weight") }, `no tensor "h.1.mlp.c_fc.weight"`},
		{"extra tensor", func(f *folder) {
			f.tensors = append(f.tensors, f32Entry("score.weight", []int{2, 8}, make([]float32, 16)))
		}, `does not: "score.weight"`},
		{"a layer too many", func(f *folder) {
			e := f.tensors[f.find("h.1.ln_1.weight")]
			e.name = "h.2.ln_1.weight"
			f.tensors = append(f.tensors, e)
		}, `"h.2.ln_1.weight"`},
		{"a weight twice", func(f *folder) {
			e := f.tensors[f.find("wpe.weight")]
			e.name = "transformer.wpe.weight"
			f.tensors = append(f.tensors, e)
		}, `"transformer.wpe.weight" and "wpe.weight" are the same weight twice`},
		{"wrong shape", func(f *folder) { f.tensors[f.find("h.0.attn.c_attn.weight")].shape = []int{24, 8} }, `"h.0.attn.c_attn.weight" has shape [24 8], config.json says [8 24]`},
		{"vocab differs", func(f *folder) { f.config["vocab_size"] = 12 }, `"wte.weight" has shape [11 8], config.json says [12 8]`},
		{"untied head", func(f *folder) {
			e := f.tensors[f.find("wte.weight")]
			e.name, e.data = "lm_head.weight", append([]byte(nil), e.data...)
			e.data[0] ^= 1
			f.tensors = append(f.tensors, e)
		}, "lm_head.weight differs from wte.weight"},
		{"untied without head", func(f *folder) { f.config["tie_word_embeddings"] = false }, "no lm_head.weight"},
		{"mask not causal", func(f *folder) {
			e := f.tensors[f.find("h.1.attn.bias")]
			e.data = append([]byte(nil), e.data...)
			binary.LittleEndian.PutUint32(e.data[4*(0*4+2):], math.Float32bits(1)) // row 0 sees position 2
			f.tensors[f.find("h.1.attn.bias")] = e
		}, `"h.1.attn.bias" is not GPT-2's causal mask: entry (0, 2)`},
		{"NaN weight", func(f *folder) {
			binary.LittleEndian.PutUint32(f.tensors[f.find("ln_f.bias")].data[4*3:], math.Float32bits(float32(math.NaN())))
		}, `"ln_f.bias" holds NaN at entry 3`},
		{"dtype not supported", func(f *folder) {
			e := &f.tensors[f.find("wpe.weight")]
			e.dtype, e.data = "I64", append(e.data, e.data...)
		}, `tensor "wpe.weight": dtype "I64" is not supported`},
		{"bool weight", func(f *folder) {
			e := &f.tensors[f.find("ln_f.weight")]
			e.dtype, e.data = "BOOL", e.data[:8]
		}, `"ln_f.weight" is BOOL, not a floating-point weight`},
		{"offsets beyond the file", func(f *folder) {
			f.header = func(h map[string]any) {
				h["ln_f.bias"].(map[string]any)["data_offsets"] = []int{1 << 20, 1<<20 + 32}
			}
		}, `tensor "ln_f.bias" ends at byte 1048608`},
		{"overlapping", func(f *folder) {
			f.header = func(h map[string]any) {
				e := h["ln_f.bias"].(map[string]any)
				e["data_offsets"] = h["ln_f.weight"].(map[string]any)["data_offsets"]
			}
		}, "overlap"},
		{"span disagrees with shape", func(f *folder) {
			f.header = func(h map[string]any) { h["ln_f.bias"].(map[string]any)["shape"] = []int{9} }
		}, `tensor "ln_f.bias": data_offsets`},
		{"truncated", func(f *folder) { f.cut = 5 }, "truncated"},
		{"truncated header", func(f *folder) {
			f.tensors = nil
			f.header = func(h map[string]any) {
				for i := range 1000 {
					h[fmt.Sprint(i)] = map[string]any{"dtype": "F32", "shape": []int{0}, "data_offsets": []int{0, 0}}
				}
			}
			f.cut = 8000
		}, "exceeds the"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := tinyFolder(1)
			c.change(f)
			_, err := Import(f.write(t), 1)
			var ie *InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want an InputError containing %q", err, c.msg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestImportFolderWithoutWeights(t *testing.T) {
	dir := tinyFolder(1).write(t)
	os.Remove(filepath.Join(dir, "model.safetensors"))
	_, err := Import(dir, 1)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "has no model.safetensors") {
		t.Fatalf("got %v", err)
	}
	os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), []byte("PK"), 0o644)
	if _, err := Import(dir, 1); err == nil || !strings.Contains(err.Error(), "save_pretrained(dir, safe_serialization=True)") {
		t.Fatalf("got %v", err)
	}
}
