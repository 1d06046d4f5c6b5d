package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/train"
)

var trainCommand = command{
	summary: "train a model from a config; writes a run folder",
	usage: `Usage: gptg train CONFIG.toml [--set section.key=value]... [--force]
       gptg train --resume RUN_DIR

Trains the model CONFIG describes and writes its run folder (train.out,
default runs/<config name>):
  config.toml             the fully resolved config (what --resume reads)
  model.safetensors       the weights, for gptg sample/eval and gptref.py
  metrics.jsonl           one JSON row per logged step; eval rows add test_loss
  checkpoint.safetensors  weights, AdamW moments and loop state, for --resume

When data.path is missing and data.url is set, the corpus is downloaded
and checked against data.sha256 first.

Ctrl-C (or SIGTERM) finishes the current step, saves the checkpoint and
the model, prints how to resume and exits with code 130.

Flags:
  --set section.key=value  override a config value (repeatable), e.g.
                           --set train.epochs=0.1 --set model.heads=4
  --resume RUN_DIR         continue an interrupted run where it stopped
  --force                  start over in a run folder that holds a run
  --quiet                  no progress output, only the final summary
` + threadsUsage,
	run: runTrain,
}

func runTrain(args []string) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	threads := threadsFlag(fs)
	var sets setFlags
	fs.Var(&sets, "set", "")
	resume := fs.String("resume", "", "")
	force := fs.Bool("force", false, "")
	quiet := fs.Bool("quiet", false, "")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	opts := train.Options{Backend: graph.Backend{Unfused: backend(0).Unfused, Threads: *threads}, Log: os.Stdout, Force: *force, Progress: term.IsTerminal(int(os.Stdout.Fd()))}
	if *quiet {
		opts.Log, opts.Progress = discard{}, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var res *train.Result
	switch {
	case *resume != "" && (len(pos) > 0 || len(sets) > 0):
		return usagef("--resume takes the run folder alone: the run keeps its own config")
	case *resume != "":
		res, err = train.Resume(ctx, *resume, opts)
	case len(pos) != 1:
		return usagef("train needs exactly one CONFIG file, got %d arguments", len(pos))
	default:
		var cfg *config.Config
		cfg, err = config.Load(pos[0], sets)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.Log, "training %s into %s\n", cfg.Path, cfg.Train.Out)
		res, err = train.Run(ctx, cfg, opts)
	}
	if errors.Is(err, train.ErrInterrupted) {
		return interruptedError{err}
	}
	if err != nil {
		return err
	}
	fmt.Printf("done: %d steps in %.1fs (%.0f tokens/s), final train loss %.4f, test loss %.4f over %d batches\nmodel: %s/%s\n",
		res.Steps, res.TrainSecs, res.TokensPerSec, res.TrainLoss, res.TestLoss, res.TestBatch, res.Dir, train.ModelFile)
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
