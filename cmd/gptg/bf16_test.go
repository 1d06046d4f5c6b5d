package main

import (
	"path/filepath"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/testmodel"
)

// TestBF16ModelProducts: a bfloat16 model file opened for sampling (and
// serving, attention maps) builds float32 products on its float32
// weights; opened for eval it keeps bfloat16, as training computed its
// test loss.
func TestBF16ModelProducts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	spec := testmodel.Config(t.TempDir(), true, 1).Model
	spec.Dtype = config.DtypeBF16
	writeGPTModel(t, path, spec)
	for _, c := range []struct {
		what string
		bf16 bool
		want string
	}{{"sampling", false, "float32"}, {"evaluating", true, config.DtypeBF16}} {
		m, err := openModel(path, func(spec config.Model) graphsOf {
			g := samplerGraphs(spec, c.what)
			g.bf16 = c.bf16
			return g
		})
		if err != nil {
			t.Fatal(err)
		}
		if m.Spec.Dtype != c.want {
			t.Errorf("%s: dtype %q, want %q", c.what, m.Spec.Dtype, c.want)
		}
	}
}
