package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
)

// TestStartingAfterTheChecks: Options.Starting is called once, before
// anything the run prints, when Run's checks of the run folder pass, and
// never when Run refuses the folder (one that holds a run, one that is not
// a run folder), for both architectures.
func TestStartingAfterTheChecks(t *testing.T) {
	tiny, err := filepath.Abs("../testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	chdir(t, dir)
	gpt := func(out string) *config.Config {
		c := tinyConfig(t, out)
		c.Data.Path = tiny
		c.Train.MaxSteps = 4
		return c
	}
	pairsPath := tinyTranslation(t, dir)
	translation := func(out string) *config.Config { return loadTiny(t, pairsPath, out, "train.max_steps=2") }
	if err := os.MkdirAll("other", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join("other", "notes.txt"), "someone else's")

	for name, build := range map[string]func(string) *config.Config{"gpt": gpt, "encoder-decoder": translation} {
		run := func(out string) (calls int, log string, err error) {
			var buf bytes.Buffer
			opts := Options{Log: &buf, Backend: graph.Backend{Threads: 1}, Starting: func() {
				calls++
				if buf.Len() > 0 {
					t.Errorf("%s: Starting called after the run printed %q", name, buf.String())
				}
				buf.WriteString("STARTING\n")
			}}
			_, err = Run(context.Background(), build(out), opts)
			return calls, buf.String(), err
		}
		out := name + "-run"
		if calls, log, err := run(out); err != nil || calls != 1 || !strings.HasPrefix(log, "STARTING\n") {
			t.Fatalf("%s: a new run: Starting called %d times, log %q, err %v", name, calls, log, err)
		}
		if calls, _, err := run(out); err == nil || calls != 0 || !strings.Contains(err.Error(), "already holds a finished run") {
			t.Errorf("%s: a folder holding a run: Starting called %d times, err %v", name, calls, err)
		}
		if calls, _, err := run("other"); err == nil || calls != 0 || !strings.Contains(err.Error(), "not a gptg run folder") {
			t.Errorf("%s: a folder that is not a run folder: Starting called %d times, err %v", name, calls, err)
		}
	}
}
