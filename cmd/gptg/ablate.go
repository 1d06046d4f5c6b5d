package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gptg/gptg/ablate"
)

var ablateCommand = command{
	summary: "train several configs side by side; one comparison table and plot",
	usage: `Usage: gptg ablate CONFIG... [--jobs N] [--out DIR] [--force] [--set section.key=value]...

Trains every CONFIG (each in DIR/<config name>, up to N at once, each its
own gptg process), then writes into DIR:
  summary.md, summary.csv  one row per config: what differs from --base,
                           parameters, steps, training time, tokens/s, final
                           train loss, test loss, prefix-only test loss, and
                           80 tokens sampled from "ROMEO:" with seed 42
  loss.png                 every run's training loss, test losses as points
A run that fails is a row with its error; the others still finish. A run
folder that already holds the finished run of the same config is reused
(an interrupted one is resumed) unless --force.

Flags:
  --jobs N                 runs at once (default 1; each uses about one core)
  --out DIR                output folder (default runs/ablate-<date-time>)
  --force                  retrain runs that are already finished
  --set section.key=value  override applied to every config (repeatable),
                           e.g. --set train.epochs=0.05 for a quick look
  --base CONFIG            config the "differs" column compares against
                           (default configs/shakespeare.toml when it exists)
`,
	// ablate still prints to os.Stdout itself; the sweep work owns this file.
	run: func(args []string, _, _ io.Writer) error { return runAblate(args) },
}

func runAblate(args []string) error {
	fs := flag.NewFlagSet("ablate", flag.ContinueOnError)
	var sets setFlags
	fs.Var(&sets, "set", "")
	jobs := fs.Int("jobs", 1, "")
	out := fs.String("out", "", "")
	force := fs.Bool("force", false, "")
	base := fs.String("base", "", "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("ablate needs at least one CONFIG file")
	case *jobs < 1 || *jobs > 64:
		return usagef("--jobs %d must be between 1 and 64", *jobs)
	}
	for _, p := range pos {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return usagef("config %s: no such file", p)
		}
	}
	if *out == "" {
		*out = filepath.Join("runs", "ablate-"+time.Now().Format("20060102-150405"))
	}
	if *base == "" {
		if _, err := os.Stat("configs/shakespeare.toml"); err == nil {
			*base = "configs/shakespeare.toml"
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the gptg binary: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("ablation of %d configs into %s, %d at a time\n", len(pos), *out, *jobs)
	rows, err := ablate.Run(ctx, pos, ablate.Options{
		Out: *out, Jobs: *jobs, Force: *force, Sets: sets, Base: *base, Exe: exe,
		Log: os.Stdout, SamplePrompt: "ROMEO:", ProgressEvery: 30 * time.Second, Backend: backend(0),
	})
	if err != nil && rows == nil {
		return err
	}
	fmt.Println()
	fmt.Print(ablate.Markdown(rows))
	fmt.Printf("\nwrote %s, %s and %s\n", filepath.Join(*out, "summary.md"), filepath.Join(*out, "summary.csv"), filepath.Join(*out, "loss.png"))
	if errors.Is(err, context.Canceled) {
		// Each training saved its checkpoint on the same signal; the same
		// command resumes them.
		return interruptedError{fmt.Errorf("interrupted: run the same command again to continue the unfinished runs")}
	}
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range rows {
		if r.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (see the table)", failed, len(rows))
	}
	return nil
}
