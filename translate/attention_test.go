package translate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/graph/tape"
	"github.com/gptg/gptg/pairs"
)

// TestAttentionMatchesPaddedBatch checks Translator.Attention's maps
// against the weights of the graph run another way: the pair as row 1 of
// a batch of two, both sides padded, another pair in row 0. At the real
// positions the weights must agree (1e-12 in float64, 1e-5 in float32),
// the PAD keys must take no weight, and every row must sum to 1 over the
// real keys. It also checks that without a target the map is over the
// model's own greedy translation.
func TestAttentionMatchesPaddedBatch(t *testing.T) {
	for ci, spec := range cacheCases {
		t.Run(fmt.Sprintf("%d-%s-%s-%s", ci, spec.Norm, spec.Positions, spec.Dtype), func(t *testing.T) {
			m := randomModel(t, spec, int64(20+ci))
			tr := NewTranslator(m, graph.Backend{})
			tol := tolerance(spec.Dtype)
			for _, target := range []string{"b1 b2 b3 b9", ""} {
				a, err := tr.Attention("a4 a9 a2 unknown a3", target)
				if err != nil {
					t.Fatal(err)
				}
				if target == "" {
					r, err := tr.Translate("a4 a9 a2 unknown a3", Options{Beam: 1})
					if err != nil {
						t.Fatal(err)
					}
					want := strings.Join(append(r.Words, "<eos>"), " ")
					if len(r.Words) == tr.TargetLen() { // no EOS: cut at the decoder's length
						want = strings.Join(r.Words, " ")
					}
					if got := strings.Join(a.Written, " "); got != want {
						t.Fatalf("attention over its own translation %q, greedy translation %q", got, r.Text)
					}
				}
				if got := strings.Join(a.Source, " "); got != "a4 a9 a2 <unk> a3 <eos>" {
					t.Fatalf("source positions %q", got)
				}
				S, T := len(a.Source), len(a.Target)
				if len(a.Written) != T || a.Target[0] != "<sos>" || target != "" && a.Written[T-1] != "<eos>" {
					t.Fatalf("target positions %q, written %q", a.Target, a.Written)
				}
				// The padded batch: row 0 another pair, row 1 this one.
				Sp, Tp := S+3, T+2
				if spec.Positions == "learned" {
					Tp = min(Tp, m.Spec.MaxLen)
				}
				src, decIn := make([]int, 2*Sp), make([]int, 2*Tp)
				copy(src, []int{5, 6, 7, 8, 9, 10, 11, pairs.EOS})
				copy(decIn, []int{pairs.SOS, 5, 6})
				for j, w := range a.Source {
					src[Sp+j] = m.Src.ID(w)
				}
				for i, w := range a.Target {
					decIn[Tp+i] = m.Tgt.ID(w)
				}
				g, err := graph.BuildTranslation(m.Spec, graph.TranslationOptions{Batch: 2, SrcLen: Sp, TgtLen: Tp})
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Apply(g.Params); err != nil {
					t.Fatal(err)
				}
				p, err := tape.CompileTranslation(g, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Run(src, decIn, nil); err != nil {
					t.Fatal(err)
				}
				H := m.Spec.Heads
				check := func(what string, maps [][]graph.Matrix, nodes []*G.Node, rows, cols, Rp, Cp int, padKey func(j int) bool) {
					t.Helper()
					if len(maps) != len(nodes) {
						t.Fatalf("%s: %d blocks, the graph has %d", what, len(maps), len(nodes))
					}
					for b := range maps {
						w := graph.Float64s(nodes[b].Value()) // (2·H, Rp, Cp)
						for h, mat := range maps[b] {
							if mat.N != rows || mat.Cols() != cols {
								t.Fatalf("%s block %d head %d: %d×%d, want %d×%d", what, b, h, mat.N, mat.Cols(), rows, cols)
							}
							for i := range Rp {
								sum := 0.0
								for j := range Cp {
									x := w[((H+h)*Rp+i)*Cp+j]
									if padKey(j) {
										if x != 0 && i < rows {
											t.Fatalf("%s block %d head %d: row %d gives PAD key %d weight %g", what, b, h, i, j, x)
										}
										continue
									}
									sum += x
									if i < rows && j < cols && !(math.Abs(x-mat.At(i, j)) <= tol) {
										t.Fatalf("%s block %d head %d: weight (%d, %d) %.17g, the padded graph's %.17g", what, b, h, i, j, mat.At(i, j), x)
									}
								}
								if i < rows && !(math.Abs(sum-1) <= tol) {
									t.Fatalf("%s block %d head %d: row %d sums to %.17g over the real keys", what, b, h, i, sum)
								}
							}
						}
					}
				}
				srcPad := func(j int) bool { return j >= S }
				check("encoder", a.Encoder, g.EncoderAttention, S, S, Sp, Sp, srcPad)
				check("cross", a.Cross, g.CrossAttention, T, S, Tp, Sp, srcPad)
				// The decoder's keys after a position are masked by the
				// causal mask; PAD positions come after every real one.
				check("decoder", a.Decoder, g.DecoderAttention, T, T, Tp, Tp, func(int) bool { return false })
				for b := range a.Decoder {
					for h, mat := range a.Decoder[b] {
						for i := range T {
							for j := i + 1; j < T; j++ {
								if mat.At(i, j) != 0 {
									t.Fatalf("decoder block %d head %d: position %d looks at the later %d (%g)", b, h, i, j, mat.At(i, j))
								}
							}
						}
					}
				}
			}
		})
	}
}
