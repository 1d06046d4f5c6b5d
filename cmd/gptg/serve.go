package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/savedmodel"
	"github.com/gptg/gptg/serve"
)

var serveCommand = command{
	summary: "a local web view of run folders: curves, sampling, attention, comparisons",
	usage: `Usage: gptg serve [DIR...] [--addr 127.0.0.1:8080] [--generations N]
                  [--max-tokens N] [--time-limit D] [--model-memory GiB] [--threads N]

Serves the run folders under each DIR (default runs/) as web pages, read
only, until Ctrl-C:
  runs      a table of runs: what differs between them, parameters, steps,
            last train and test loss, tokens/s, state (training,
            interrupted, finished, failed); tick runs to overlay their curves
  a run     its loss curves, updated live while gptg train writes
            metrics.jsonl; its config and model summary; a sampling
            playground (tokens stream in as they are drawn); an attention
            explorer (each head's entropy and distance, and every head's
            map up to 16 heads, one picked from the summary beyond; hover
            a token, click a head)
  compare   the table and banded curves of a gptg ablate or gptg sweep folder
Run folders are found again while the server runs: a run started later
shows up, a deleted one goes away. Nothing is fetched from the network:
the pages and their chart library are inside the binary.

It listens on 127.0.0.1 (this machine only) unless --addr says otherwise,
and then warns: anyone who can reach the address can read the runs and
make the server run models. Only files inside the DIRs are served (no ..,
no absolute paths, no symlinks that lead out).

Flags:
  --addr HOST:PORT     where to listen (default 127.0.0.1:8080; port 0
                       picks a free one, printed at start)
  --generations N      model runs (generations, attention maps) at once;
                       one more is answered "busy" (HTTP 429) (default 2)
  --max-tokens N       tokens one generation may ask for (default 2000)
  --time-limit D       time one generation may take (default 60s)
  --model-memory GiB   memory for loaded models and their graphs; the least
                       recently used are dropped to stay under it (default 2)
  --threads N          cores one model run uses (default 1, so that a
                       generation leaves the cores to a training beside it)
`,
	run: runServe,
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "")
	generations := fs.Int("generations", serve.DefaultGenerations, "")
	maxTokens := fs.Int("max-tokens", serve.DefaultMaxTokens, "")
	timeLimit := fs.Duration("time-limit", serve.DefaultTimeLimit, "")
	memory := fs.Float64("model-memory", float64(serve.DefaultModelMemory)/config.GiB, "")
	threads := threadsFlag(fs) // refuses a negative or absurd count while parsing
	*threads = 1
	dirs, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	switch {
	case *generations < 1 || *generations > 64:
		return usagef("--generations %d must be between 1 and 64", *generations)
	case *maxTokens < 1 || *maxTokens > 1_000_000:
		return usagef("--max-tokens %d must be between 1 and 1000000", *maxTokens)
	case *timeLimit <= 0:
		return usagef("--time-limit %s must be positive", *timeLimit)
	case !(*memory > 0) || *memory > 1<<20:
		return usagef("--model-memory %v must be a positive number of GiB", *memory)
	case *memory*config.GiB < 1<<20:
		// Less would round to no bytes, which the server takes as its default.
		return usagef("--model-memory %v GiB is less than 1 MiB: no model fits", *memory)
	}
	if len(dirs) == 0 {
		dirs = []string{"runs"}
		if _, err := os.Stat("runs"); errors.Is(err, os.ErrNotExist) {
			return usagef("there is no runs/ folder here: train a model first (gptg train configs/shakespeare.toml), or name the folder that holds the run folders")
		}
	}
	loopback := serve.Loopback(*addr)
	srv, err := serve.New(serve.Options{
		Dirs: dirs, Generations: *generations, MaxTokens: *maxTokens, TimeLimit: *timeLimit,
		ModelMemory: int64(*memory * config.GiB), Backend: backend(max(*threads, 0)),
		OpenModel: openServedModel,
		Summary: func(path string) (string, error) {
			var b bytes.Buffer
			err := runInspect([]string{path}, &b, io.Discard)
			return b.String(), err
		},
		AnyHost: !loopback,
	})
	if err != nil {
		return usageError{err.Error()}
	}
	defer srv.Close()
	if srv.Note != "" {
		fmt.Fprintf(stderr, "gptg serve: %s\n", srv.Note)
	}
	if err := checkAddr(*addr); err != nil {
		return err
	}
	return listenAndServe(srv, *addr, dirs, loopback, stdout, stderr)
}

// openServedModel opens a model file for gptg serve, counting the
// sampler's graphs: its refusals are answers to a request, not to a
// command line.
func openServedModel(path string) (*savedmodel.Model, error) {
	m, err := openModel(path, func(spec config.Model) graphsOf { return samplerGraphs(spec, "serving") })
	var ue usageError
	var me *config.MemoryError
	switch {
	case errors.As(err, &ue): // an answer to a request, not a command line: no "(see --help)"
		return nil, errors.New(ue.msg)
	case errors.As(err, &me): // too large for what is left: 507
		return nil, serve.TooLarge(err)
	}
	return m, err
}

// listenAndServe serves srv on addr until a signal comes.
func listenAndServe(srv *serve.Server, addr string, dirs []string, loopback bool, stdout, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil { // in use, or not this machine's: a failure at run time
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	// Every request's context ends when a signal comes, so that the live
	// streams and generations return and Shutdown is quick.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		// A request's body (at most 64 KiB) must arrive within ReadTimeout
		// of its start; streams' writes have their own deadline
		// (serve.writeTimeout). Idle keep-alive connections are closed.
		ReadTimeout:    30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		BaseContext:    func(net.Listener) context.Context { return ctx },
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "gptg serve: %s on %s (Ctrl-C stops)\n", joinDirs(dirs), url)
	if !loopback {
		fmt.Fprintf(stderr, "gptg serve: warning: listening on %s, not only on this machine: anyone who can reach it can read these runs and make this machine run models\n", ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil {
		hs.Close()
	}
	fmt.Fprintln(stdout, "gptg serve: stopped")
	return nil
}

func joinDirs(dirs []string) string {
	var b bytes.Buffer
	for i, d := range dirs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d)
	}
	return b.String()
}

// checkAddr refuses an --addr that is not HOST:PORT with a numeric port,
// a usage error rather than the resolver's complaint at run time.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %s: not HOST:PORT (%v)", quote.Value(addr), err)
	}
	if len(host) > 253 { // DNS's longest name; the resolver's error would echo it whole
		return usagef("--addr %s: the host is longer than 253 bytes", quote.Value(addr))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usagef("--addr %s: the port %s is not a number from 0 to 65535", quote.Value(addr), quote.Value(port))
	}
	return nil
}
