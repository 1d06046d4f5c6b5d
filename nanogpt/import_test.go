package nanogpt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/eval"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/internal/golden"
	"github.com/gptg/gptg/savedmodel"
)

// The checkpoints in testdata/nanogpt were written by nanoGPT's train.py
// (testdata/nanogpt/make.py): 2 blocks, 2 heads, embedding 16, context 16,
// bias on, trained 20 iterations on testdata/tiny.txt.
var (
	ckpt         = filepath.Join("..", "testdata", "nanogpt", "ckpt.pt")
	ckptCompiled = filepath.Join("..", "testdata", "nanogpt", "ckpt-compiled.pt")
	meta         = filepath.Join("..", "testdata", "nanogpt", "meta.pkl")
	// metaProtocol0 is meta.pkl as pickle.dump(..., protocol=0) writes it:
	//   python3 -c "import pickle; pickle.dump(pickle.load(open('meta.pkl', 'rb')), open('meta-protocol0.pkl', 'wb'), protocol=0)"
	metaProtocol0 = filepath.Join("..", "testdata", "nanogpt", "meta-protocol0.pkl")
)

func TestImportLayout(t *testing.T) {
	m, err := Import(ckpt, meta)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Spec
	if s.Vocab != 55 || s.Blocks != 2 || s.Heads != 2 || s.Embedding != 16 || s.Context != 16 ||
		!s.Bias || !s.TieEmbeddings || !s.FinalNorm || s.Norm != "pre" || s.Activation != "gelu_exact" || s.Dtype != "float32" {
		t.Errorf("spec %+v", s)
	}
	if got, want := strings.Join(m.Vocab.Tokens()[:5], ""), "\n !',"; got != want {
		t.Errorf("vocabulary starts %q, want %q", got, want)
	}
	shapes := map[string][]int{}
	for _, x := range m.Tensors {
		shapes[x.Name] = x.Shape
	}
	// 2 embeddings, per block 2 norms × 2 + 6 linears × 2, the final norm × 2; no out.*.
	if len(shapes) != 2+2*(4+12)+2 {
		t.Errorf("%d tensors: %v", len(shapes), shapes)
	}
	for name, want := range map[string][]int{
		"tok.weight": {55, 16}, "pos.weight": {16, 16}, "blocks.1.att.k.weight": {16, 16}, "blocks.1.att.v.bias": {16},
		"blocks.0.ff.up.weight": {64, 16}, "blocks.0.ff.down.weight": {16, 64}, "final_norm.bias": {16},
	} {
		if !slices.Equal(shapes[name], want) {
			t.Errorf("%s: shape %v, want %v", name, shapes[name], want)
		}
	}
	if _, ok := shapes["out.weight"]; ok {
		t.Error("a tied model must not store out.weight")
	}

	// The compiled checkpoint: keys prefixed _orig_mod., no attn.bias buffers, same numbers.
	c, err := Import(ckptCompiled, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Tensors {
		if a, b := m.Tensors[i], c.Tensors[i]; a.Name != b.Name || !slices.Equal(a.F32, b.F32) {
			t.Errorf("tensor %s differs between the plain and the compiled checkpoint", a.Name)
		}
	}
}

// pickled writes a torch.save-like zip holding data.pkl = pkl and the
// given storages (zipCheckpoint) to a file, and returns its path.
func pickled(t *testing.T, pkl []byte, storages map[string][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ckpt.pt")
	if err := os.WriteFile(path, zipCheckpoint(t, pkl, storages), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tensorPickle is protocol-2 pickle of {"model": {"w": tensor}} whose
// tensor has the given size and a storage of numel floats.
func tensorPickle(size, numel byte) []byte {
	p := []byte("\x80\x02}(X\x05\x00\x00\x00model}X\x01\x00\x00\x00w" +
		"ctorch._utils\n_rebuild_tensor_v2\n(" +
		"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK")
	p = append(p, numel)
	p = append(p, []byte("tQK\x00K")...)
	p = append(p, size)
	p = append(p, []byte("\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRsu.")...)
	return p
}

func TestHostileCheckpoints(t *testing.T) {
	good, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	huge := binary.LittleEndian.AppendUint64([]byte("\x80\x04\x8e"), 1<<62)
	cases := []struct {
		name string
		path func(t *testing.T) string
		msg  string
	}{
		{"not a zip", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "x.pt")
			os.WriteFile(p, []byte("hello"), 0o644)
			return p
		}, "not a PyTorch checkpoint"},
		{"truncated zip", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "x.pt")
			os.WriteFile(p, good[:len(good)/2], 0o644)
			return p
		}, "not a PyTorch checkpoint"},
		{"no data.pkl", func(t *testing.T) string {
			var buf bytes.Buffer
			z := zip.NewWriter(&buf)
			z.Create("archive/other")
			z.Close()
			p := filepath.Join(t.TempDir(), "x.pt")
			os.WriteFile(p, buf.Bytes(), 0o644)
			return p
		}, "no data.pkl"},
		{"unknown global", func(t *testing.T) string {
			return pickled(t, []byte("\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR."), nil)
		}, `the global "os.system"`},
		{"stack global", func(t *testing.T) string {
			return pickled(t, []byte("\x80\x04\x8c\x02os\x8c\x06system\x93."), nil)
		}, "opcode 0x93"},
		{"huge length", func(t *testing.T) string { return pickled(t, huge, nil) }, "claims 4611686018427387904 bytes"},
		{"no STOP", func(t *testing.T) string { return pickled(t, []byte("\x80\x02}"), nil) }, "without STOP"},
		{"unhashable key", func(t *testing.T) string {
			return pickled(t, []byte("\x80\x03ccollections\nOrderedDict\n)RC\x01aK\x01s."), nil)
		}, "malformed pickle"},
		{"tensor past its storage", func(t *testing.T) string {
			return pickled(t, tensorPickle(8, 4), map[string][]byte{"0": make([]byte, 16)})
		}, "overruns its storage"},
		{"not a checkpoint of train.py", func(t *testing.T) string {
			return pickled(t, tensorPickle(4, 4), map[string][]byte{"0": make([]byte, 16)})
		}, "not a checkpoint written by nanoGPT's train.py"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import(c.path(t), meta)
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

func TestHostileMeta(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		return p
	}
	for _, c := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"a global", []byte("\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R."), `the global "builtins.eval"`},
		{"not a dict", []byte("\x80\x02K\x01."), "not a nanoGPT meta.pkl"},
		{"gap in itos", []byte("\x80\x02}X\x04\x00\x00\x00itos}K\x05X\x01\x00\x00\x00ass."), "itos is not a map"},
		{"empty", nil, "without STOP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadMeta(write(c.name, c.data))
			var ie *InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want an InputError containing %q", err, c.msg)
			}
		})
	}
}

func TestStorageShorterThanDeclared(t *testing.T) {
	c, err := openCheckpoint(pickled(t, tensorPickle(4, 4), map[string][]byte{"0": make([]byte, 8)}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, root, _ := dictOf(c.root)
	_, model, _ := dictOf(root["model"])
	_, _, err = c.readFloats(model["w"].(*tensorRef))
	if err == nil || !strings.Contains(err.Error(), "holds 8 bytes, its 4 torch.FloatStorage elements need 16") {
		t.Fatalf("got %v", err)
	}
}

// TestImportedModelMatchesNanoGPT: the model imported from nanoGPT's
// checkpoint gives nanoGPT's logits (float32, ≤ 1e-5 relative) on the
// first test window of testdata/tiny.txt, and its test loss over gptg's
// test windows (nanoGPT computed both, testdata/nanogpt/import.json), on
// the fused and the unfused graph.
func TestImportedModelMatchesNanoGPT(t *testing.T) {
	var want struct {
		Window []int `json:"window"`
		Logits struct {
			Data []float64 `json:"data"`
		} `json:"logits"`
		TestLoss    float64 `json:"test_loss"`
		TestBatches int     `json:"test_batches"`
		Batch       int     `json:"batch"`
	}
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "nanogpt", "import.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	m, err := Import(ckpt, meta)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	saved, err := savedmodel.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := corpus.Load(filepath.Join("..", "testdata", "tiny.txt"), "char", saved.Spec.Context, 0, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	for _, unfused := range []bool{false, true} {
		be := graph.Backend{Unfused: unfused}
		g, err := graph.Build(saved.Spec, graph.Options{Batch: 1, Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		if err := saved.Apply(g.Params); err != nil {
			t.Fatal(err)
		}
		p, err := tape.Compile(g, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(want.Window, nil); err != nil {
			t.Fatal(err)
		}
		if e := golden.RelErr(graph.Float64s(g.Logits.Value()), want.Logits.Data, 0); !(e <= 1e-5) {
			t.Errorf("unfused=%v: logits differ from nanoGPT's by %.3g (relative)", unfused, e)
		}
		p.Close()
		loss, n, err := eval.ModelTestLoss(saved, data, want.Batch, be)
		if err != nil {
			t.Fatal(err)
		}
		if n != want.TestBatches || math.Abs(loss-want.TestLoss) > 1e-4 {
			t.Errorf("unfused=%v: test loss %.6f over %d batches, nanoGPT %.6f over %d", unfused, loss, n, want.TestLoss, want.TestBatches)
		}
	}
}
