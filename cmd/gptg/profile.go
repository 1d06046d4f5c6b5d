package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
)

// startCPUProfile starts Go's CPU profiler for the command's run; the
// profile is what bench/NOTES.md's "where the time goes" tables are read
// from. It obeys the rule of every output flag (checkOutput): not over a
// device, a folder or an input, and over an existing file only when that
// is a profile (gzip) already, or with --force. The profile is written to a temporary file
// beside path; the returned stop puts it in place when keep is true (the
// command ran: it finished or was interrupted) and removes it otherwise,
// so that a command refused before any work leaves no file behind.
func startCPUProfile(path string, force bool, inputs []string) (stop func(keep bool) error, err error) {
	if atomicfile.IsStdout(path) {
		return nil, usagef("--cpuprofile %s: a profile is binary and standard output is the command's log; give a file name", path)
	}
	if err := checkOutput("--cpuprofile", path, atomicfile.Rules{Force: force, Inputs: inputs, Own: atomicfile.HasPrefix("\x1f\x8b")}); err != nil {
		return nil, err
	}
	target, err := atomicfile.Target(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	dir := filepath.Dir(target)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		// The run folder itself is made later, by the training.
		return nil, usagef("--cpuprofile %s: no folder %s to write it in (a run folder exists only once training starts: put the profile beside it)", quote.Name(path), quote.Name(dir))
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile %s: %w", quote.Name(path), unwrapPath(err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func(keep bool) error {
		pprof.StopCPUProfile()
		err := f.Close()
		if err == nil && keep {
			if err = os.Chmod(f.Name(), 0o644); err == nil {
				err = os.Rename(f.Name(), target)
			}
		}
		if err != nil || !keep {
			os.Remove(f.Name())
		}
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}
