//go:build amd64 && !purego

package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/internal/guardmem"
)

// TestPackChecksWidth: asked to pack more rows or columns (cnt) than the
// strip or panel is wide (w), the bfloat16 packs stop at a bounds check
// in Go before the assembly runs, for every layout and an odd and an
// even k, instead of writing past dst (which ends at a guard page here).
func TestPackChecksWidth(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(43, 44))
	var wk worker
	const w = 12
	for _, kc := range []int{7, 8} {
		kp := bf16BlockWords(kc)
		cnt := w + 1
		src := to32(randoms(rng, (cnt+kc)*(cnt+kc)))
		for _, layout := range []string{"pairs", "pairs along rows", "rows"} {
			chains := layout != "pairs"
			dst := guardmem.End[uint32](t, kp*w)
			fault, msg := guardmem.Catch(func() {
				switch layout {
				case "rows":
					packBF16Rows(true, chains, dst, kp, w, src, cnt+kc, 0, kc, 0, cnt)
				default:
					packBF16(&wk, true, chains, dst, kp, w, src, cnt+kc, layout == "pairs along rows", 0, kc, 0, cnt)
				}
			})
			label := fmt.Sprintf("%s (chains %v), k %d, %d of %d", layout, chains, kc, cnt, w)
			if fault {
				t.Errorf("%s: the assembly wrote past dst: %s", label, msg)
			} else if msg == "" {
				t.Errorf("%s: no bounds check stopped the pack", label)
			}
		}
	}
}
