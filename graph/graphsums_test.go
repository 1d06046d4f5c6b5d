package graph_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/internal/graphtest"
	"github.com/gptg/gptg/graph/tape"
)

// graphSums is the file of TestGraphSums: one line per graph, its name
// and the SHA-256 of its listing (see listGraph).
const graphSums = "../testdata/graph-sums.txt"

// TestGraphSums builds the graphs of both architectures in their
// variants (every switch that changes the graph, both dtypes, fused and
// unfused, the training graph with its gradients and the sampling,
// cached, encoder, decoder and step graphs) and compares each one's
// listing, node by node, with the sum recorded in testdata/graph-sums.txt.
//
// Two graphs with the same listing compute the same bits on any machine:
// the same operations with the same settings on the same inputs in the
// same order, from the same initial parameters. So a change that is meant
// to reorganise the code that builds the models without changing what
// they compute (the layers shared by both architectures, say) must leave
// every sum as it is; the golden tests, which allow round-off, could not
// tell. A change that is meant to change a graph records the new sums:
//
//	GPTG_UPDATE_GRAPH_SUMS=1 go test -run TestGraphSums ./graph/
//
// and GPTG_GRAPH_LISTINGS=dir writes each listing into dir, to compare two
// versions with diff.
func TestGraphSums(t *testing.T) {
	got := map[string]string{}
	var order []string
	record := func(name string, g *G.ExprGraph) {
		t.Helper()
		listing := listGraph(g)
		if dir := os.Getenv("GPTG_GRAPH_LISTINGS"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".txt"), []byte(listing), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got[name] = fmt.Sprintf("%x", sha256.Sum256([]byte(listing)))
		order = append(order, name)
	}
	for _, v := range gptGraphVariants() {
		for _, dtype := range []string{"float32", "float64"} {
			for _, path := range graphtest.Paths {
				spec := v.spec
				spec.Dtype = dtype
				recordGPTGraphs(t, "gpt/"+v.name+"/"+dtype+"/"+path.Name, spec, graph.Backend{Unfused: path.Unfused}, record)
			}
		}
	}
	for _, v := range translationGraphVariants() {
		for _, dtype := range []string{"float32", "float64"} {
			for _, path := range graphtest.Paths {
				spec := v.spec
				spec.Dtype = dtype
				recordTranslationGraphs(t, "translation/"+v.name+"/"+dtype+"/"+path.Name, spec, graph.Backend{Unfused: path.Unfused}, record)
			}
		}
	}

	if os.Getenv("GPTG_UPDATE_GRAPH_SUMS") != "" {
		var b strings.Builder
		for _, name := range order {
			fmt.Fprintf(&b, "%s %s\n", name, got[name])
		}
		if err := os.WriteFile(graphSums, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readGraphSums(t)
	for _, name := range order {
		switch w, ok := want[name]; {
		case !ok:
			t.Errorf("%s: no sum in %s (a new graph? GPTG_UPDATE_GRAPH_SUMS=1 records it)", name, graphSums)
		case w != got[name]:
			t.Errorf("%s: the graph differs from the one recorded in %s", name, graphSums)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("%s: recorded in %s but no longer built", name, graphSums)
	}
}

func readGraphSums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(graphSums)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, sum, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("%s: line %q is not a name and a sum", graphSums, sc.Text())
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// listGraph lists every node of g in the order it was made: its id, name,
// type and shape, its operation with the settings that the operation
// hashes (a fused kernel's sizes, scale, eps…), its inputs' ids and the
// SHA-256 of its value when it has one (the initial parameters, the
// constants).
func listGraph(g *G.ExprGraph) string {
	var b strings.Builder
	for _, n := range g.AllNodes() {
		name := n.Name()
		if op := n.Op(); op != nil && op.String() == "print" {
			// G.Read's node names and hashes the address it writes to,
			// which changes from one build to the next.
			name, _, _ = strings.Cut(name, " into ")
		}
		fmt.Fprintf(&b, "%d %q %v %v", n.ID(), name, n.Type(), n.Shape())
		if op := n.Op(); op != nil {
			settings := op.String()
			if settings != "print" {
				var w opSettings
				op.WriteHash(&w)
				settings = string(w)
			}
			fmt.Fprintf(&b, " op %q", settings)
		}
		b.WriteString(" in")
		for in := g.From(n.ID()); in.Next(); {
			fmt.Fprintf(&b, " %d", in.Node().ID())
		}
		if v := n.Value(); v != nil {
			h := sha256.New()
			if err := binary.Write(h, binary.LittleEndian, v.Data()); err != nil {
				fmt.Fprintf(h, "%v", v.Data())
			}
			fmt.Fprintf(&b, " value %x", h.Sum(nil)[:8])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// opSettings is a hash.Hash that keeps what is written into it.
type opSettings []byte

var _ hash.Hash = (*opSettings)(nil)

func (s *opSettings) Write(p []byte) (int, error) { *s = append(*s, p...); return len(p), nil }
func (s *opSettings) Sum(b []byte) []byte         { return append(b, *s...) }
func (s *opSettings) Reset()                      { *s = nil }
func (s *opSettings) Size() int                   { return len(*s) }
func (s *opSettings) BlockSize() int              { return 1 }

type gptGraphVariant struct {
	name string
	spec config.Model
}

// gptGraphVariants are graphtest.SmallSpec with each switch that changes
// the graph turned, and nanoGPT's set.
func gptGraphVariants() []gptGraphVariant {
	base := graphtest.SmallSpec("pre")
	with := func(name string, change func(m *config.Model)) gptGraphVariant {
		m := base
		change(&m)
		return gptGraphVariant{name, m}
	}
	return []gptGraphVariant{
		{"pre", base},
		with("post", func(m *config.Model) { m.Norm = "post" }),
		with("no-norm", func(m *config.Model) { m.Norm = "none" }),
		with("no-residual", func(m *config.Model) { m.Residual = false }),
		with("no-qkv", func(m *config.Model) { m.QKV = false }),
		with("no-out-proj", func(m *config.Model) { m.OutProj = false }),
		with("no-mask", func(m *config.Model) { m.Mask = false }),
		with("relu", func(m *config.Model) { m.Activation = "relu" }),
		with("nanogpt", func(m *config.Model) {
			m.Dropout, m.TieEmbeddings, m.Bias, m.FinalNorm = 0.2, true, false, true
			m.Activation, m.Init = "gelu_exact", "gpt2"
		}),
	}
}

// recordGPTGraphs records a GPT's training graph (with dropout and the
// gradients), its evaluation graph, a sampling graph shorter than the
// context and, for a causal model, its cached graph.
func recordGPTGraphs(t *testing.T, name string, spec config.Model, be graph.Backend, record func(string, *G.ExprGraph)) {
	t.Helper()
	build := func(what string, o graph.Options, grads bool) {
		o.Backend, o.Seed = be, 5
		m, err := graph.Build(spec, o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tape.Compile(m, grads)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		record(name+"/"+what, m.G)
	}
	build("train", graph.Options{Batch: 3, Loss: true, Dropout: true}, true)
	build("eval", graph.Options{Batch: 2, Loss: true}, false)
	build("short", graph.Options{Batch: 1, SeqLen: 4}, false)
	if spec.Mask {
		m, err := graph.BuildCached(spec, be)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tape.CompileCached(m)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		record(name+"/cached", m.G)
	}
}

type translationGraphVariant struct {
	name string
	spec graph.TranslationSpec
}

// translationGraphVariants are a small encoder–decoder with the paper's
// settings and with each switch that changes the graph turned.
func translationGraphVariants() []translationGraphVariant {
	base := graph.TranslationSpec{SrcVocab: 11, TgtVocab: 13, MaxLen: 7, Embedding: 8, Heads: 2, EncoderBlocks: 2, DecoderBlocks: 2,
		FFHidden: 12, Norm: "post", Positions: "sinusoidal", Activation: "relu", LabelSmoothing: 0.1, Dropout: 0.1, Dtype: "float32"}
	with := func(name string, change func(s *graph.TranslationSpec)) translationGraphVariant {
		s := base
		change(&s)
		return translationGraphVariant{name, s}
	}
	return []translationGraphVariant{
		{"paper", base},
		with("pre", func(s *graph.TranslationSpec) { s.Norm = "pre" }),
		with("learned", func(s *graph.TranslationSpec) { s.Positions = "learned" }),
		with("tied-gelu", func(s *graph.TranslationSpec) { s.TieEmbeddings, s.Activation = true, "gelu" }),
		with("no-smoothing-gelu-exact", func(s *graph.TranslationSpec) { s.LabelSmoothing, s.Activation = 0, "gelu_exact" }),
	}
}

// recordTranslationGraphs records an encoder–decoder's training graph
// (with dropout and the gradients), its loss graph with every row's
// logits, its forward graph, the encoder graph with the cross-attention
// keys, the decoder graph and the decoder's step graph.
func recordTranslationGraphs(t *testing.T, name string, spec graph.TranslationSpec, be graph.Backend, record func(string, *G.ExprGraph)) {
	t.Helper()
	build := func(what string, o graph.TranslationOptions, grads bool) {
		o.Batch, o.SrcLen, o.TgtLen, o.Seed, o.Backend = 3, 5, 6, 11, be
		m, err := graph.BuildTranslation(spec, o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tape.CompileTranslation(m, grads)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		record(name+"/"+what, m.G)
	}
	build("train", graph.TranslationOptions{Loss: true, Dropout: true}, true)
	build("loss-logits", graph.TranslationOptions{Loss: true, Logits: true}, false)
	build("forward", graph.TranslationOptions{}, false)
	build("encoder", graph.TranslationOptions{Part: "encoder", CrossKeys: true}, false)
	build("decoder", graph.TranslationOptions{Part: "decoder"}, false)
	m, err := graph.BuildTranslationStep(spec, 3, 5, 6, be, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tape.CompileTranslationStep(m)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	record(name+"/step", m.G)
}
