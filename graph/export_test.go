package graph

import "github.com/gptg/gptg/config"

// BuildBF16Reference builds spec's bfloat16 model as the unfused graph in
// float64: each product's operands and gradient rounded to bfloat16 as in
// a bfloat16 graph, every sum and every other op in float64. It is what
// the fused bfloat16 graph computes, but for the float32 arithmetic
// around the rounding.
func BuildBF16Reference(spec config.Model, o Options) (*Model, error) {
	bf16Reference = true
	defer func() { bf16Reference = false }()
	spec.Dtype, o.Unfused = "float64", true
	return Build(spec, o)
}
