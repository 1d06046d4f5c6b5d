package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScriptStampsRevision: ./gptg.sh in a fresh clone builds a gptg whose
// version names the clone's commit, even where the Go environment says
// GOFLAGS=-buildvcs=false (as some machines' go env does: `gptg version`
// then printed "revision unknown").
func TestScriptStampsRevision(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("%s is not a git checkout (%v): there is no revision to stamp", root, err)
	}
	clone := filepath.Join(t.TempDir(), "gptg")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	// The script under test is the working tree's, committed or not.
	script, err := os.ReadFile(filepath.Join(root, "gptg.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "gptg.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(clone, "gptg.sh"), "version")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gptg.sh version: %v\n%s", err, out)
	}
	want := "revision " + strings.TrimSpace(string(head))
	if !strings.Contains(string(out), want) {
		t.Errorf("gptg.sh version in a fresh clone printed %q, want it to name %q", out, want)
	}
}
