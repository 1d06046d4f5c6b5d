package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gptg/gptg/config"
)

// TestParentLine: a config that extends another records the parent and
// what it changes (config.Load's Extends, parentHeader), Parent reads it
// back, and lines that are missing or mangled read as no parent.
func TestParentLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.toml"), []byte("[model]\nheads = 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "child.toml"), []byte("extends = \"base.toml\"\n[model]\nheads = 2\n"), 0o644)
	cfg, err := config.Load(filepath.Join(dir, "child.toml"), []string{"train.seed=3"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Extends != filepath.Join(dir, "base.toml") {
		t.Fatalf("Extends %q, want base.toml's path", cfg.Extends)
	}
	line := parentHeader(cfg)
	text := []byte("# run id: x\n" + line + "[data]\n")
	parent, changes, ok := Parent(text)
	if !ok || parent != filepath.Join(dir, "base.toml") || strings.Join(changes, " ") != "model.heads=2 train.seed=3 train.out=runs/child" {
		t.Fatalf("Parent of %q: %q %q %v", line, parent, changes, ok)
	}
	if readParentLine(text) != line {
		t.Errorf("readParentLine: %q, want %q", readParentLine(text), line)
	}
	for _, bad := range []string{
		"[data]\n" + line, // after the comments: not the header
		"# extends: base.toml changes: []\n",
		"# extends: \"base.toml\" changes: [model\n",
		"# extends: \"base.toml\"\n",
	} {
		if _, _, ok := Parent([]byte(bad)); ok {
			t.Errorf("Parent read %q as a parent line", bad)
		}
	}
	base, _ := config.Load(filepath.Join(dir, "base.toml"), nil)
	if base.Extends != "" || parentHeader(base) != "" {
		t.Errorf("a config that extends none: Extends %q, header %q", base.Extends, parentHeader(base))
	}
}
