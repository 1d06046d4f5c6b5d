package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/sample"
	"github.com/gptg/gptg/savedmodel"
)

// TestAttentionSummary: --summary prints each head's entropy and mean
// distance, sample.Stats of the head's own map to the printed digits;
// --head B.H prints the summary and that head's table alone; a picture of
// either is written; a --head that is not BLOCK.HEAD of the model, or
// beside --summary, is exit 2 with one line.
func TestAttentionSummary(t *testing.T) {
	const text = "Citizen"
	m, err := savedmodel.Load(causalModel)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := m.Vocab.Encode(text)
	smp, err := sample.New(m, graph.Backend{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	want, err := smp.Attention(ids)
	smp.Close()
	if err != nil {
		t.Fatal(err)
	}

	out := ok(t, t.TempDir(), "attention", causalModel, "--text", text, "--summary")
	// two tables, entropy then distance: "block  B  v v ..." rows
	var rows [][]float64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "block" || strings.HasSuffix(f[1], ",") {
			continue
		}
		var row []float64
		for _, s := range f[2:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%q: %v\n%s", line, err, out)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	B, H := len(want), len(want[0])
	if len(rows) != 2*B {
		t.Fatalf("%d table rows, want %d (entropy and distance of %d blocks):\n%s", len(rows), 2*B, B, out)
	}
	for b := range want {
		for h := range want[b] {
			st := sample.Stats(want[b][h])
			if len(rows[b]) != H || len(rows[B+b]) != H {
				t.Fatalf("block %d: %d and %d heads printed, want %d:\n%s", b, len(rows[b]), len(rows[B+b]), H, out)
			}
			if math.Abs(rows[b][h]-st.Entropy) > 0.005+1e-9 || math.Abs(rows[B+b][h]-st.Distance) > 0.05+1e-9 {
				t.Errorf("block %d head %d: printed entropy %v, distance %v; sample.Stats %+v", b, h, rows[b][h], rows[B+b][h], st)
			}
		}
	}
	// the yardstick: a causal head even over i+1 positions at position i
	evenBits := 0.0
	for i := range len(ids) {
		evenBits += math.Log2(float64(i+1)) / float64(len(ids))
	}
	if line := fmt.Sprintf("spreads evenly over all it may see: %.2f bits, %.1f positions", evenBits, float64(len(ids)-1)/4); !strings.Contains(out, line) {
		t.Errorf("want %q in:\n%s", line, out)
	}
	if strings.Contains(out, "block 0, head 0") {
		t.Errorf("--summary printed a head's table:\n%s", out)
	}

	out = ok(t, t.TempDir(), "attention", causalModel, "--text", text, "--head", "0.1")
	tables := parseTables(t, out[strings.Index(out, "block 0, head 1"):])
	if !strings.Contains(out, "entropy") || len(tables) != 1 || tables[0].title != "block 0, head 1" {
		t.Fatalf("--head 0.1: want the summary and block 0, head 1's table alone; got:\n%s", out)
	}
	for i, row := range tables[0].rows {
		for j, v := range row {
			if math.Abs(v-want[0][1].At(i, j)) > 0.0005+1e-9 {
				t.Fatalf("--head 0.1 [%d][%d]: printed %v, sample.Attention %v", i, j, v, want[0][1].At(i, j))
			}
		}
	}

	dir := t.TempDir()
	for _, args := range [][]string{{"--summary", "--out", "s.png"}, {"--summary", "--out", "s.svg"}, {"--head", "0.0", "--out", "h.png"}} {
		ok(t, dir, append([]string{"attention", causalModel, "--text", text}, args...)...)
		data, err := os.ReadFile(filepath.Join(dir, args[len(args)-1]))
		if err != nil || !(bytes.HasPrefix(data, []byte("\x89PNG")) || bytes.HasPrefix(data, []byte("<?xml"))) {
			t.Errorf("%v: %.20q, %v", args, data, err)
		}
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--head", "x"}, `--head "x": want BLOCK.HEAD, such as 0.3`},
		{[]string{"--head", "0"}, `--head "0": want BLOCK.HEAD`},
		{[]string{"--head", "1.0"}, "--head 1.0: the model has blocks 0–0 and heads 0–1"},
		{[]string{"--head", "0.2"}, "--head 0.2: the model has blocks 0–0 and heads 0–1"},
		{[]string{"--head", "0.0", "--summary"}, "--summary and --head ask for two different views"},
	} {
		r := gptg(t, t.TempDir(), append([]string{"attention", causalModel, "--text", text}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.msg) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.msg)
		}
	}
}
