package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/train"
)

// finetuneRecipe is nanoGPT's finetune_shakespeare at CPU size.
var finetuneRecipe = filepath.Join("..", "..", "configs", "nanogpt", "finetune-shakespeare.toml")

// writeHFGPT2 writes a Hugging Face GPT-2 folder (config.json and
// model.safetensors in the Hub's layout, without the mask buffers) of L
// blocks, H heads, embedding C, T positions and GPT-2's 50,257 tokens,
// with normal(0, 0.02) weights of seed (layer norm gains 1 + that).
func writeHFGPT2(t *testing.T, dir string, L, H, C, T int, seed uint64) {
	t.Helper()
	const V = 50257
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"model_type": "gpt2", "architectures": []string{"GPT2LMHeadModel"}, "activation_function": "gelu_new",
		"n_layer": L, "n_head": H, "n_embd": C, "n_positions": T, "n_ctx": T, "vocab_size": V,
		"layer_norm_epsilon": 1e-5, "attn_pdrop": 0.1, "embd_pdrop": 0.1, "resid_pdrop": 0.1,
		"bos_token_id": 50256, "eos_token_id": 50256, "initializer_range": 0.02,
	})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	add := func(name string, one bool, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		begin := len(data)
		for range n {
			v := 0.02 * rng.NormFloat64()
			if one {
				v++
			}
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
		}
		header[name] = map[string]any{"dtype": "F32", "shape": shape, "data_offsets": []int{begin, len(data)}}
	}
	add("wte.weight", false, V, C)
	add("wpe.weight", false, T, C)
	for i := range L {
		h := fmt.Sprintf("h.%d.", i)
		add(h+"ln_1.weight", true, C)
		add(h+"ln_1.bias", false, C)
		add(h+"attn.c_attn.weight", false, C, 3*C)
		add(h+"attn.c_attn.bias", false, 3*C)
		add(h+"attn.c_proj.weight", false, C, C)
		add(h+"attn.c_proj.bias", false, C)
		add(h+"ln_2.weight", true, C)
		add(h+"ln_2.bias", false, C)
		add(h+"mlp.c_fc.weight", false, C, 4*C)
		add(h+"mlp.c_fc.bias", false, 4*C)
		add(h+"mlp.c_proj.weight", false, 4*C, C)
		add(h+"mlp.c_proj.bias", false, C)
	}
	add("ln_f.weight", true, C)
	add("ln_f.bias", false, C)
	h, _ := json.Marshal(header)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	file = append(append(file, h...), data...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFinetuneRecipe runs configs/nanogpt/finetune-shakespeare.toml end to
// end at a small GPT-2 shape: a random-weight Hugging Face folder is
// imported, the BPE shakespeare token files prepared, and the recipe
// (batch 4, grad_accum 8, constant lr, eval every 5 steps) fine-tunes the
// imported model from --init, its 64 positions cut to a context of 32.
// The run shows its progress line and writes one metrics row a step; a
// run stopped by SIGINT and resumed ends with the very weights and
// metrics of the run that was never stopped. A model file of another
// shape is refused.
func TestFinetuneRecipe(t *testing.T) {
	dir := t.TempDir()
	writeHFGPT2(t, filepath.Join(dir, "small-gpt2"), 2, 2, 8, 64, 7)
	if r := gptg(t, dir, "import", "hf", "small-gpt2", "--out", "gpt2.safetensors"); r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	if r := gptg(t, dir, "data", "prepare", "shakespeare", "--out", "data/shakespeare"); r.code != 0 {
		t.Fatalf("prepare: exit %d: %s", r.code, r.stderr)
	}
	recipe, err := filepath.Abs(finetuneRecipe)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 8
	small := []string{"--set", "model.blocks=2", "--set", "model.heads=2", "--set", "model.embedding=8",
		"--set", "model.context=32", "--set", fmt.Sprintf("train.max_steps=%d", steps)}
	args := func(out string) []string {
		return append([]string{"train", recipe, "--init", "gpt2.safetensors", "--set", "train.out=" + out}, small...)
	}

	whole := gptg(t, dir, args("whole")...)
	if whole.code != 0 {
		t.Fatalf("fine-tuning: exit %d\nstdout: %s\nstderr: %s", whole.code, whole.stdout, whole.stderr)
	}
	for _, want := range []string{
		"starting from the weights of gpt2.safetensors\n",
		"its 64 learned positions cut to the config's context of 32\n",
		fmt.Sprintf("step %d/%d ", steps, steps),
		" lr 3.00e-05 ",
		" test_loss ",
		fmt.Sprintf("done: %d steps", steps),
	} {
		if !strings.Contains(whole.stdout, want) {
			t.Errorf("the run's output lacks %q:\n%s", want, whole.stdout)
		}
	}
	wholeRows := metricRows(t, filepath.Join(dir, "whole"))
	if len(wholeRows) != steps {
		t.Fatalf("%d metrics rows, want one a step (log_every = 1): %v", len(wholeRows), wholeRows)
	}
	for i, r := range wholeRows {
		if r["lr"] != 3e-5 {
			t.Errorf("step %d: lr %v, want the constant 3e-5", i+1, r["lr"])
		}
		if _, has := r["test_loss"]; has != ((i+1)%5 == 0 || i+1 == steps) {
			t.Errorf("step %d: test_loss present = %v, want it every 5 steps and at the end", i+1, has)
		}
	}

	// Stopped by SIGINT after its third step is logged, then resumed.
	cmd := exec.Command(gptgBin, args("part")...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !signalled && strings.HasPrefix(sc.Text(), fmt.Sprintf("step 3/%d ", steps)) {
				cmd.Process.Signal(syscall.SIGINT)
				signalled = true
			}
		}
		io.Copy(io.Discard, stdout)
		done <- out.String()
	}()
	var out string
	select {
	case out = <-done:
	case <-time.After(commandTimeout):
		cmd.Process.Kill()
		t.Fatal("the interrupted run did not stop")
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(out, "--resume") {
		t.Fatalf("interrupted run: exit %d (%v), want 130 and how to resume:\n%s", code, err, out)
	}
	if rows := metricRows(t, filepath.Join(dir, "part")); len(rows) >= steps {
		t.Fatalf("the interrupted run logged %d steps: it was not interrupted", len(rows))
	}
	if r := gptg(t, dir, "train", "--resume", "part"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("done: %d steps", steps)) {
		t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	a, b := modelTensors(t, filepath.Join(dir, "whole")), modelTensors(t, filepath.Join(dir, "part"))
	if !reflect.DeepEqual(a, b) {
		t.Error("the interrupted and resumed run's weights differ from the uninterrupted run's")
	}
	if got := metricRows(t, filepath.Join(dir, "part")); !reflect.DeepEqual(got, wholeRows) {
		t.Errorf("metrics differ:\n%v\n%v", got, wholeRows)
	}
	// Fine-tuning moved the weights away from the imported ones.
	init, err := modelfile.Read(filepath.Join(dir, "gpt2.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(init.Tensors["blocks.0.ff.up.weight"], a["blocks.0.ff.up.weight"]) {
		t.Error("the fine-tuned weights are the imported ones")
	}

	// A model file of another shape than the config's is refused.
	r := gptg(t, dir, append(args("other"), "--set", "model.blocks=3")...)
	if r.code != 2 || !strings.Contains(r.stderr, "gpt2.safetensors holds another model than this config describes: it has model.blocks=2") {
		t.Errorf("--init of another shape: exit %d, stderr %s", r.code, r.stderr)
	}
}

// TestFinetuneRecipeEstimate: the recipe itself, at GPT-2 124M, parses
// and `gptg graph` prints its memory estimate for training without
// reading a model or the data.
func TestFinetuneRecipeEstimate(t *testing.T) {
	recipe, err := filepath.Abs(finetuneRecipe)
	if err != nil {
		t.Fatal(err)
	}
	r := gptg(t, t.TempDir(), "graph", recipe)
	if r.code != 0 || !strings.Contains(r.stdout, "total                                      123849984\n") ||
		!strings.Contains(r.stdout, "memory estimate for training: about ") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// metricRows reads a run's metrics.jsonl without its timing and memory
// fields, which differ from run to run.
func metricRows(t *testing.T, dir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, train.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for line := range strings.Lines(string(data)) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"tokens_per_s", "elapsed_s", "heap_mb", "rss_mb"} {
			delete(r, k)
		}
		rows = append(rows, r)
	}
	return rows
}

// modelTensors reads a run's model.safetensors.
func modelTensors(t *testing.T, dir string) map[string]modelfile.Tensor {
	t.Helper()
	f, err := modelfile.Read(filepath.Join(dir, train.ModelFile), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return f.Tensors
}

// finetuneGoldenTolerance bounds the relative error of gptg's float64
// fine-tuning against the float64 PyTorch reference: each step's loss and
// gradient norm, and each tensor's update over the 3 steps. Measured: at
// most 3.5e-14.
const finetuneGoldenTolerance = 1e-10

// TestFinetuneGolden: the first 3 steps of the recipe (batch 4,
// grad_accum 8, constant lr 3e-5, weight decay on matrices, clip 1) in
// float64 from testdata/finetune's imported GPT-2 (positions cut to 32)
// match bench/gpt2ref.py finetune's PyTorch AdamW on the same windows
// (testdata/finetune/make.sh): the losses, the gradient norms before
// clipping, and the update of tensors of every kind (the tied embedding's
// rows, positions, q and output projections, a layer norm's gain and
// bias, the last block's feed-forward).
func TestFinetuneGolden(t *testing.T) {
	dir := t.TempDir()
	data, err := filepath.Abs(filepath.Join("..", "..", "testdata", "finetune"))
	if err != nil {
		t.Fatal(err)
	}
	recipe, err := filepath.Abs(finetuneRecipe)
	if err != nil {
		t.Fatal(err)
	}
	if r := gptg(t, dir, "import", "hf", filepath.Join(data, "small"), "--out", "m.safetensors"); r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	set := []string{"model.blocks=2", "model.heads=2", "model.embedding=16", "model.context=32", "model.dtype=float64",
		"train.max_steps=3", "train.out=run", "data.path=" + filepath.Join(data, "train.bin"), "data.val_path=" + filepath.Join(data, "val.bin"),
		"data.prepare=", "data.sha256=", "data.size=0", "data.val_sha256=", "data.val_size=0"}
	args := []string{"train", recipe, "--init", "m.safetensors"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	if r := gptg(t, dir, args...); r.code != 0 {
		t.Fatalf("train: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	ref, err := modelfile.Read(filepath.Join(data, "ref.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	init, err := modelfile.Read(filepath.Join(dir, "m.safetensors"), modelfile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := modelTensors(t, filepath.Join(dir, "run"))
	rows := metricRows(t, filepath.Join(dir, "run"))
	check := func(what string, got, want float64) {
		if e := math.Abs(got-want) / math.Abs(want); !(e <= finetuneGoldenTolerance) {
			t.Errorf("%s: gptg %.17g, PyTorch %.17g (relative error %.2g)", what, got, want, e)
		}
	}
	losses, norms := ref.Tensors["loss"].F64, ref.Tensors["grad_norm"].F64
	if len(losses) != 3 || len(rows) != 3 {
		t.Fatalf("%d reference steps, %d metrics rows; want 3", len(losses), len(rows))
	}
	for s := range losses {
		check(fmt.Sprintf("step %d loss", s+1), rows[s]["loss"].(float64), losses[s])
		check(fmt.Sprintf("step %d grad_norm", s+1), rows[s]["grad_norm"].(float64), norms[s])
	}
	tensors := 0
	for name, r := range ref.Tensors {
		if name == "loss" || name == "grad_norm" {
			continue
		}
		tensors++
		name = strings.TrimSuffix(name, ".rows64") // the first 64 rows of tok.weight
		g, i0 := got[name].F64, init.Tensors[name].F32
		if len(g) < len(r.F64) || len(i0) < len(r.F64) {
			t.Fatalf("%s: gptg has %d values, the imported file %d, the reference %d", name, len(g), len(i0), len(r.F64))
		}
		var diff, norm float64
		for j, want := range r.F64 {
			du, dr := g[j]-float64(i0[j]), want-float64(i0[j])
			diff += (du - dr) * (du - dr)
			norm += dr * dr
		}
		if e := math.Sqrt(diff / norm); norm == 0 || !(e <= finetuneGoldenTolerance) {
			t.Errorf("%s: the update's relative error is %.2g (‖update‖² %.3g)", name, e, norm)
		}
	}
	if tensors != 7 {
		t.Errorf("%d tensors in the reference, want 7", tensors)
	}
}
