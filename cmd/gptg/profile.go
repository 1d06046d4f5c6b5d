package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/gptg/gptg/internal/atomicfile"
)

// startCPUProfile starts Go's CPU profiler writing to path; the returned
// function stops it and closes the file. The profile is what
// bench/NOTES.md's "where the time goes" tables are read from.
func startCPUProfile(path string) (stop func(), err error) {
	// Through atomicfile's rule for outputs: not over a device or a link.
	if path, err = atomicfile.Target(path); err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
