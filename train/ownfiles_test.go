package train

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRunFilesReplaceLinks: config.toml and metrics.jsonl are files a run
// names itself in its folder, so a link planted at their path (between the
// start of a run, which removes the old run's files, and their writing) is
// replaced by the run's file, never written through to what it names.
func TestRunFilesReplaceLinks(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "precious.txt")
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	plant := func(name string) string {
		t.Helper()
		if err := os.WriteFile(outside, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(run, name)
		os.Remove(p)
		if err := os.Symlink(outside, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(p string) {
		t.Helper()
		if b, _ := os.ReadFile(outside); string(b) != "precious" {
			t.Errorf("writing %s wrote through the link: the file it named holds %q", filepath.Base(p), b)
		}
		if info, err := os.Lstat(p); err != nil || !info.Mode().IsRegular() {
			t.Errorf("%s is not a regular file after the write (%v)", filepath.Base(p), err)
		}
	}

	tr := &trainer{cfg: tinyConfig(t, run), dir: run, runID: "0123456789abcdef"}
	p := plant(ConfigFile)
	if err := tr.writeConfig(); err != nil {
		t.Fatal(err)
	}
	check(p)

	p = plant(MetricsFile)
	l := &metricsLog{path: p}
	if err := l.reset(0, 0, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.append(MetricsRow{Step: 1}); err != nil {
		t.Fatal(err)
	}
	check(p)
}
