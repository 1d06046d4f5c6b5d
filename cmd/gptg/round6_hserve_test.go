package main

import "strings"

// Round six of hostile input (issue #24), gptg serve's flags; its requests
// and runs folders are tested in serve/round6_test.go, and the probes are
// testdata/hostile/probes_hserve.py.
func round6ServeInputs() []badInput {
	return []badInput{
		// int64(1e-12 GiB) is 0 bytes, which the server took as "the
		// default": 2 GiB, silently.
		{name: "serve --model-memory 1e-12", args: []string{"serve", ".", "--model-memory", "1e-12"}, code: 2, msg: "--model-memory 1e-12 GiB is less than 1 MiB: no model fits"},
		// Every other command bounds --threads; serve started 100,000
		// goroutines per model run.
		{name: "serve --threads 100000", args: []string{"serve", ".", "--threads", "100000"}, code: 2, msg: "must be 0 (every core) or a number of threads up to 4096"},
		// It passed as HOST:PORT, then net.Listen's error echoed all
		// 100 KB, exit 1.
		{name: "serve --addr of a 100 KB host", args: []string{"serve", ".", "--addr", strings.Repeat("1", 100_000) + ":80"}, code: 2, msg: "the host is longer than 253 bytes"},
	}
}
