// Package testmodel trains the tiny models that the tests of cmd/gptg,
// sample and eval run on. Training one takes well under a second, which is
// cheaper and more honest than checking model files into the repository:
// the tests always exercise what the current trainer writes.
package testmodel

import (
	"context"
	"path/filepath"
	"runtime"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/train"
)

// TinyText is the path of testdata/tiny.txt (6 KB of Shakespeare), found
// from this source file so that every test package can use it whatever its
// working directory.
func TinyText() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "tiny.txt")
}

// Config is a float64 model with context 8, embedding 8, one block of two
// heads, trained for steps steps in batches of 2 on TinyText into out.
// mask picks a causal or an unmasked model. float64 keeps the comparisons
// of the tests exact to 1e-12.
func Config(out string, mask bool, steps int) *config.Config {
	c := config.Default()
	c.Data.Path = TinyText()
	c.Data.Stride = 4
	c.Model = config.Model{Bias: true, Init: "torch", Context: 8, Embedding: 8, Blocks: 1, Heads: 2, QKV: true, Mask: mask,
		OutProj: true, Residual: true, Norm: "pre", Activation: "gelu", FFMult: 2, Dtype: "float64"}
	c.Train.Batch = 2
	c.Train.MaxSteps = steps
	c.Train.Warmup = 0
	c.Train.LogEvery = max(1, steps)
	c.Train.Out = out
	return c
}

// Train runs c and returns the path of the model file it wrote.
func Train(c *config.Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if _, err := train.Run(context.Background(), c, train.Options{}); err != nil {
		return "", err
	}
	return filepath.Join(c.Train.Out, train.ModelFile), nil
}
