package train

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestInitCropsPositions: a run whose model.context is shorter than the
// --init file's starts from the file's first context positions (nanoGPT's
// crop_block_size) and says so; every other weight is the file's, so the
// first step's loss is the trained model's on windows it knows; a longer
// context than the file's is refused.
func TestInitCropsPositions(t *testing.T) {
	first := tinyConfig(t, t.TempDir())
	if _, err := Run(context.Background(), first, Options{}); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(first.Train.Out, ModelFile)
	file := params(t, first.Train.Out)

	short := tinyConfig(t, t.TempDir())
	short.Model.Context = 5
	short.Train.MaxSteps, short.Train.LR, short.Train.MinLR, short.Train.Warmup = 1, 0, 0, 0
	short.Train.WeightDecay = 0
	var log strings.Builder
	if _, err := Run(context.Background(), short, Options{Init: model, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "its 8 learned positions cut to the config's context of 5\n") {
		t.Errorf("the run does not say it cut the positions:\n%s", log.String())
	}
	got := params(t, short.Train.Out)
	pos := got["pos.weight"]
	if !reflect.DeepEqual(pos.Shape, []int{5, 8}) || !reflect.DeepEqual(pos.F64, file["pos.weight"].F64[:5*8]) {
		t.Errorf("pos.weight %v %v, want the file's first 5 rows %v", pos.Shape, pos.F64, file["pos.weight"].F64[:5*8])
	}
	if !reflect.DeepEqual(got["blocks.0.ff.up.weight"], file["blocks.0.ff.up.weight"]) {
		t.Error("a step at lr 0 changed the file's weights")
	}

	long := tinyConfig(t, t.TempDir())
	long.Model.Context = 9
	_, err := Run(context.Background(), long, Options{Init: model})
	wantErr(t, err, "holds another model than this config describes: it has model.context=8")
}
