package translate

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gptg/gptg/graph"
)

// TestParamNamesMatchTheGraph holds paramNames, by which Load refuses a
// file's extra tensors, to the parameters the graph builder declares, over
// every switch that adds or removes one.
func TestParamNamesMatchTheGraph(t *testing.T) {
	for _, positions := range []string{"learned", "sinusoidal"} {
		for _, norm := range []string{"pre", "post"} {
			for _, tie := range []bool{false, true} {
				for _, blocks := range [][2]int{{1, 1}, {2, 3}} {
					s := graph.TranslationSpec{SrcVocab: 7, TgtVocab: 7, MaxLen: 6, Embedding: 4, Heads: 2,
						EncoderBlocks: blocks[0], DecoderBlocks: blocks[1], FFHidden: 8, Norm: norm,
						Positions: positions, Activation: "relu", TieEmbeddings: tie, Dtype: "float64"}
					t.Run(fmt.Sprintf("%s %s tie=%v blocks=%v", positions, norm, tie, blocks), func(t *testing.T) {
						m, err := graph.BuildTranslation(s, graph.TranslationOptions{Batch: 1, SrcLen: 2, TgtLen: 2})
						if err != nil {
							t.Fatal(err)
						}
						got := slices.Sorted(maps.Keys(paramNames(s)))
						var want []string
						for _, p := range m.Params {
							want = append(want, p.Name)
						}
						slices.Sort(want)
						if !slices.Equal(got, want) {
							t.Errorf("paramNames:\n%v\nthe graph's:\n%v", got, want)
						}
						if n := int64(graph.CountParams(m.Params)); maxParams(s) < n {
							t.Errorf("maxParams %d is below the graph's %d parameters", maxParams(s), n)
						}
					})
				}
			}
		}
	}
}
