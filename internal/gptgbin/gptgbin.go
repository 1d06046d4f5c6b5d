// Package gptgbin builds the gptg command once per test binary, for the
// tests of packages that run it as a user would (signals, locks, a sweep
// of processes): building it once per test took most of their time.
package gptgbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	exe  string
	err  error
)

// Path builds the module's cmd/gptg, the first time it is called in this
// process, and returns the binary's path.
func Path(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "gptg-test"); err != nil {
			return
		}
		exe = filepath.Join(dir, "gptg")
		if out, berr := exec.Command("go", "build", "-o", exe, "github.com/gptg/gptg/cmd/gptg").CombinedOutput(); berr != nil {
			err = fmt.Errorf("building gptg: %v\n%s", berr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// Remove deletes what Path built: call it from TestMain after m.Run.
func Remove() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
