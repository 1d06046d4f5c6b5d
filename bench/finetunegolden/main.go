// Command finetunegolden is the Go side of bench/finetune-golden.sh and
// testdata/finetune/make.sh: it prints the window offsets gptg's random
// sampling draws, for the PyTorch reference to train on the same batches,
// and compares a gptg fine-tuning run with the reference's output.
//
//	go run ./bench/finetunegolden offsets --seed S --tokens N --context T --windows W --steps K
//	go run ./bench/finetunegolden compare RUN_DIR INIT.safetensors REF.safetensors
//
// offsets prints K lines of W offsets into a token file of N tokens: the
// windows of steps 0..K-1 of a run with data.sampling = "random",
// train.seed = S and batch × grad_accum = W (train/run.go's batch: a PCG
// stream of (seed ^ "random", step), each offset IntN(N − T)).
//
// compare reads the run's metrics.jsonl (one row a step) and
// model.safetensors (float64) and the reference's losses, gradient
// norms and tensors (bench/gpt2ref.py finetune --out), and prints the
// relative error of each step's loss and gradient norm and, for each
// tensor, of its update ‖(gptg − init) − (ref − init)‖ / ‖ref − init‖;
// it exits 1 when one is above --tol (default 1e-9).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"github.com/gptg/gptg/modelfile"
)

// saltRandomBatches is train/run.go's salt of the random windows' stream.
const saltRandomBatches = 0x72616e646f6d

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: finetunegolden offsets|compare ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "offsets":
		err = offsets(os.Args[2:])
	case "compare":
		err = compare(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "finetunegolden:", err)
		os.Exit(1)
	}
}

func offsets(args []string) error {
	fs := flag.NewFlagSet("offsets", flag.ExitOnError)
	seed := fs.Int64("seed", 1337, "train.seed")
	tokens := fs.Int("tokens", 0, "tokens in the training file")
	context := fs.Int("context", 256, "model.context")
	windows := fs.Int("windows", 32, "batch × grad_accum")
	steps := fs.Int("steps", 3, "steps")
	fs.Parse(args)
	if *tokens <= *context {
		return fmt.Errorf("--tokens %d must exceed --context %d", *tokens, *context)
	}
	w := bufio.NewWriter(os.Stdout)
	for s := range *steps {
		rng := rand.New(rand.NewPCG(uint64(*seed)^saltRandomBatches, uint64(s)))
		for i := range *windows {
			if i > 0 {
				w.WriteString(" ")
			}
			fmt.Fprint(w, rng.IntN(*tokens-*context))
		}
		w.WriteString("\n")
	}
	return w.Flush()
}

func compare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	tol := fs.Float64("tol", 1e-9, "largest relative error allowed")
	fs.Parse(args)
	if fs.NArg() != 3 {
		return fmt.Errorf("compare RUN_DIR INIT.safetensors REF.safetensors")
	}
	run, initPath, refPath := fs.Arg(0), fs.Arg(1), fs.Arg(2)
	ref, err := modelfile.Read(refPath, modelfile.Limits{})
	if err != nil {
		return err
	}
	got, err := modelfile.Read(filepath.Join(run, "model.safetensors"), modelfile.Limits{})
	if err != nil {
		return err
	}
	init, err := modelfile.Read(initPath, modelfile.Limits{})
	if err != nil {
		return err
	}
	rows, err := readMetrics(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		return err
	}
	worst := 0.0
	report := func(what string, e float64) {
		worst = max(worst, e)
		fmt.Printf("%-40s relative error %.2e\n", what, e)
	}
	losses, norms := ref.Tensors["loss"].F64, ref.Tensors["grad_norm"].F64
	if len(rows) < len(losses) {
		return fmt.Errorf("%s has %d rows, the reference %d steps", run, len(rows), len(losses))
	}
	for s := range losses {
		fmt.Printf("step %d: loss gptg %.15g ref %.15g; grad_norm gptg %.15g ref %.15g\n", s+1, rows[s]["loss"], losses[s], rows[s]["grad_norm"], norms[s])
		report(fmt.Sprintf("step %d loss", s+1), math.Abs(rows[s]["loss"]-losses[s])/math.Abs(losses[s]))
		report(fmt.Sprintf("step %d grad_norm", s+1), math.Abs(rows[s]["grad_norm"]-norms[s])/math.Abs(norms[s]))
	}
	var names []string
	for name := range ref.Tensors {
		if name != "loss" && name != "grad_norm" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		r := ref.Tensors[name].F64
		gname, n := name, len(r)
		if name == "tok.weight.rows64" {
			gname = "tok.weight"
		}
		g, i0 := values(got.Tensors[gname]), values(init.Tensors[gname])
		if len(g) < n || len(i0) < n {
			return fmt.Errorf("tensor %s: gptg has %d values, the initial file %d, the reference %d", gname, len(g), len(i0), n)
		}
		var diff, norm float64
		for j := range n {
			du, dr := g[j]-i0[j], r[j]-i0[j]
			diff += (du - dr) * (du - dr)
			norm += dr * dr
		}
		report(name+" update", math.Sqrt(diff/norm))
	}
	fmt.Printf("largest relative error %.2e (tolerance %.0e)\n", worst, *tol)
	if !(worst <= *tol) {
		return fmt.Errorf("largest relative error %.2e is above %.0e", worst, *tol)
	}
	return nil
}

func values(t modelfile.Tensor) []float64 {
	if t.F64 != nil {
		return t.F64
	}
	out := make([]float64, len(t.F32))
	for i, v := range t.F32 {
		out[i] = float64(v)
	}
	return out
}

func readMetrics(path string) ([]map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []map[string]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}
