package train

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gptg/gptg/graph"
)

// TestResumeWritesAMissingModel: a run killed after its last checkpoint
// and before its model file was written (the OOM killer while it wrote
// model.safetensors) needs no --force to come back. A resume
// writes the model from the checkpoint — byte for byte the one the run
// would have written — when it is missing or older than the checkpoint,
// and still refuses a finished run whose model is in place.
func TestResumeWritesAMissingModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"gpt", func(t *testing.T, dir string) {
			if _, err := Run(context.Background(), tinyConfig(t, dir), Options{Log: io.Discard}); err != nil {
				t.Fatal(err)
			}
		}},
		{"translation", func(t *testing.T, dir string) {
			chdir(t, filepath.Dir(dir))
			cfg := loadTiny(t, tinyTranslation(t, filepath.Dir(dir)), dir)
			if _, err := Run(context.Background(), cfg, Options{Log: io.Discard, Backend: graph.Backend{Threads: 1}}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			tc.run(t, dir)
			model := filepath.Join(dir, ModelFile)
			want, err := os.ReadFile(model)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Resume(context.Background(), dir, nil, Options{Log: io.Discard}); err == nil {
				t.Fatal("a finished run with its model resumed without an error")
			}

			old := time.Now().Add(-time.Hour)
			for _, damage := range []func() error{
				func() error { return os.Remove(model) },
				func() error { // written before the last checkpoint
					os.WriteFile(model, []byte("stale"), 0o644)
					return os.Chtimes(model, old, old)
				},
			} {
				if err := damage(); err != nil {
					t.Fatal(err)
				}
				var log bytes.Buffer
				res, err := Resume(context.Background(), dir, nil, Options{Log: &log})
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				got, err := os.ReadFile(model)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("model after the resume: %d bytes (err %v), want the run's own %d bytes", len(got), err, len(want))
				}
				if !bytes.Contains(log.Bytes(), []byte("written from the checkpoint")) || res.Steps == 0 {
					t.Errorf("log %q, result %+v", log.String(), res)
				}
			}
		})
	}
}
