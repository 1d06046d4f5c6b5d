package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus/builtin"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/internal/terminal"
	"github.com/gptg/gptg/modelfile"
	"github.com/gptg/gptg/tokenfile"
	"github.com/gptg/gptg/train"
	"github.com/gptg/gptg/translate"
)

var trainCommand = command{
	summary: "train a model from a config; writes a run folder",
	usage: `Usage: gptg train CONFIG.toml [--set section.key=value]... [--init MODEL] [--force]
       gptg train --resume RUN_DIR [--set train.max_steps=N | --set train.epochs=E]

Trains the model CONFIG describes and writes its run folder (train.out,
default runs/<config name>):
  config.toml             the fully resolved config (what --resume reads),
                          with the corpus's data.sha256 and data.size
  model.safetensors       the weights, for gptg sample/eval and gptref.py
  metrics.jsonl           one JSON row per logged step; eval rows add test_loss
  checkpoint.safetensors  weights, AdamW moments and loop state, for --resume

data.path = "builtin:NAME" trains on a corpus built into gptg, from any
folder and offline (built in: ` + strings.Join(builtin.Names(), ", ") + `).
When data.path is a missing file and data.url is set, the corpus is
downloaded and checked against data.sha256 first.

Ctrl-C (or SIGTERM, or SIGHUP when the terminal closes) finishes the
current step (or stops the evaluation under way), saves the checkpoint and
the model, prints how to resume and exits with code 130.

One process at a time owns a run folder: a second gptg train on the same
folder stops at once, naming the process that holds it (exit 1).

--resume continues the run exactly as it was; its config.toml must not be
edited (the [sample] table aside). It finds the run's corpus from any
folder (data.path, where the file was, the same place relative to the
run folder or inside it, its name beside the run folder, or built in:
docs/data.md) and refuses a corpus whose content differs. With
--set train.max_steps=N or --set train.epochs=E it also extends a run,
finished or not: the run goes on from the step it is at, with the
learning-rate schedule (warmup, then cosine down to min_lr) recomputed
for the new length.

model.dtype = "bfloat16" is mixed precision: the model's matrix products
round their operands to bfloat16 and sum in float32; weights, AdamW, norms,
softmax and loss stay float32 (docs/configs.md). It helps on Intel CPUs
with AMX (Sapphire Rapids and later, on Linux), whose tiles do 14x
float32's multiply-add peak: a whole step of nanoGPT's 10.8M shape 2.8x
faster, its 0.8M CPU shape 1.6x; and on AMD Zen 4 and Zen 5, whose
VDPBF16PS (AVX512_BF16) does twice an FMA's multiply-adds at the FMA's
rate, the more the larger the products (docs/performance.md). It does
not help on Intel CPUs where AMX is missing or refused by the OS: there
VDPBF16PS runs at half float32's rate (measured on Sapphire Rapids with
AMX off) and a step is slower; training measures the two peaks at its
start (0.2 s) and says so in one line where bfloat16's is not the
higher. Nor on CPUs without AVX512_BF16,
where it runs the plain-Go kernel (the same numbers, far slower; training
says so in one line). Every kernel gives the same bits.

Flags:
  --set section.key=value  override a config value (repeatable), e.g.
                           --set train.epochs=0.1 --set model.heads=4;
                           --train.epochs=0.1 (nanoGPT's style) is the same
  --resume RUN_DIR         continue an interrupted run where it stopped, or
                           extend a run (with --set of train.max_steps or
                           train.epochs only)
  --init MODEL             start from the weights of a model file or run
                           folder (fine-tuning, nanoGPT's init_from): the
                           config must describe that model over the same
                           vocabulary; the optimiser and schedule start anew
  --force                  start over in a run folder that holds a run
  --replacing ID@STEP      with --force: only if the folder still holds that
                           run at that step (ablate and sweep pass what
                           they saw, so that a run another runner trained
                           since is not trained again)
  --quiet                  no progress output, only the final summary
  --distributed            one rank of a job that mpirun or srun started:
                           the ranks share each step's train.grad_accum
                           batches (their count must divide it) and give
                           the weights of one process, bit for bit; rank 0
                           writes the run folder (docs/experiments.md;
                           needs a build with -tags mpi)
  --cpuprofile FILE        write a Go CPU profile of the whole command to
                           FILE, for go tool pprof (where the time goes)
` + threadsUsage,
	run: runTrain,
}

func runTrain(args []string, stdout, stderr io.Writer) (retErr error) {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	threads := threadsFlag(fs)
	var sets setFlags
	fs.Var(&sets, "set", "")
	resume := fs.String("resume", "", "")
	force := fs.Bool("force", false, "")
	replacing := fs.String("replacing", "", "")
	initFrom := fs.String("init", "", "")
	quiet := fs.Bool("quiet", false, "")
	cpuprofile := fs.String("cpuprofile", "", "")
	distributed := fs.Bool("distributed", false, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if *cpuprofile != "" {
		inputs := append([]string{*resume, *initFrom}, pos...)
		stopProfile, err := startCPUProfile(*cpuprofile, *force, inputs)
		if err != nil {
			return err
		}
		defer func() {
			// The profile of a run that trained (finished or interrupted)
			// stays; a refused command leaves none.
			keep := retErr == nil || errors.Is(retErr, train.ErrInterrupted) || errors.As(retErr, new(interruptedError))
			if perr := stopProfile(keep); perr != nil && retErr == nil {
				retErr = perr
			}
		}()
	}
	// --threads 0 (unset) leaves the choice to train.threads, then to every core.
	opts := train.Options{Backend: graph.Backend{Unfused: unfused(), Threads: *threads}, Log: stdout, Force: *force, Replacing: *replacing, Progress: terminal.Is(stdout)}
	if *quiet {
		opts.Log, opts.Progress = discard{}, false
	}
	if *distributed {
		comm, err := joinJob()
		if err != nil {
			return err
		}
		defer func() { retErr = finishJob(comm, retErr) }()
		distribute(&opts, comm, stderr)
	}
	// A closed terminal or a dropped ssh session (SIGHUP) saves like Ctrl-C:
	// otherwise every step since the last checkpoint would be lost.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	res, err := startOrResume(ctx, pos, *resume, *initFrom, *replacing, *force, sets, opts)
	if errors.Is(err, train.ErrInterrupted) {
		return interruptedError{err}
	}
	if err != nil {
		return err
	}
	if opts.Comm != nil && opts.Comm.Rank() != 0 {
		return nil // rank 0 reports the run
	}
	fmt.Fprintf(stdout, "done: %d steps in %.1fs (%.0f tokens/s), final train loss %.4f, test loss %.4f over %d batches\nmodel: %s/%s\n",
		res.Steps, res.TrainSecs, res.TokensPerSec, res.TrainLoss, res.TestLoss, res.TestBatch, res.Dir, train.ModelFile)
	return nil
}

// startOrResume checks that the flags name one run and one way to start it
// (continue from a checkpoint, or a new run from a config) and trains it.
func startOrResume(ctx context.Context, pos []string, resume, initFrom, replacing string, force bool, sets []string, opts train.Options) (*train.Result, error) {
	switch {
	case resume != "" && len(pos) > 0:
		return nil, usagef("--resume takes the run folder alone: the run keeps its own config")
	case resume != "" && initFrom != "":
		return nil, usagef("--init starts a new run; --resume continues one from its own checkpoint")
	case replacing != "" && !force:
		return nil, usagef("--replacing says which run --force may start over: give it with --force")
	case resume != "" && force:
		// Refused rather than one of them ignored: a user who meant to
		// start over would get a continued run, or the other way round.
		return nil, usagef("--resume continues the run from its checkpoint and --force would start it over: give one of them (to start over: gptg train %s --force)", quote.Name(filepath.Join(resume, "config.toml")))
	case resume != "":
		if err := checkResumeDir(resume); err != nil {
			return nil, err
		}
		return train.Resume(ctx, resume, sets, opts)
	case len(pos) != 1:
		return nil, usagef("train needs exactly one CONFIG file, got %d arguments", len(pos))
	default:
		return trainConfig(ctx, pos[0], sets, initFrom, opts)
	}
}

// trainConfig starts a new run of the config at path (with sets), checked
// before anything is written: the config, its memory, its data and
// --init's model file; Run checks the run folder.
func trainConfig(ctx context.Context, path string, sets []string, initFrom string, opts train.Options) (*train.Result, error) {
	if err := checkConfigPath(path); err != nil {
		return nil, err
	}
	cfg, err := config.Load(path, sets)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckTrainMemory(); err != nil {
		return nil, err
	}
	if err := checkDataPath(cfg); err != nil {
		return nil, err
	}
	if initFrom != "" {
		if opts.Init, err = modelPath(initFrom); err != nil {
			return nil, err
		}
		if err := refuseInitKind(opts.Init, cfg); err != nil {
			return nil, err
		}
	}
	opts.Starting = func() {
		if opts.Comm == nil || opts.Comm.Rank() == 0 { // one line for a job of several ranks
			fmt.Fprintf(opts.Log, "training %s into %s\n", cfg.Path, cfg.Train.Out)
		}
	}
	return train.Run(ctx, cfg, opts)
}

// checkConfigPath refuses a CONFIG that is a run folder, pointing to
// --resume, and a missing one with the closest config file beside where it
// was looked for, as a mistyped name is the usual cause.
func checkConfigPath(path string) error {
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		if _, err := os.Stat(filepath.Join(path, train.ConfigFile)); err == nil {
			return usagef("%s is a run folder: continue or extend it with `gptg train --resume %s`, or train its config anew with `gptg train %s --force`",
				quote.Name(path), quote.Name(path), quote.Name(filepath.Join(path, train.ConfigFile)))
		}
		return usagef("config %s: is a directory, not a config file", quote.Name(path))
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		var names []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".toml") {
				names = append(names, e.Name())
			}
		}
		if g := config.Suggest(filepath.Base(path), names); g != "" {
			return usagef("config %s: no such file; did you mean %s?", quote.Name(path), quote.Name(filepath.Join(dir, g)))
		}
		if _, err := os.Stat(dir); err != nil {
			return usagef("config %s: no such file (no folder %s)", quote.Name(path), quote.Name(dir))
		}
	}
	return nil
}

// checkResumeDir refuses, as a usage error and before anything is locked
// or written, a --resume that names no run folder: a missing path, a file,
// a folder without the config.toml every run writes first.
func checkResumeDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("--resume %s: no such run folder", quote.Name(dir))
	case !info.IsDir():
		return usagef("--resume %s: is a file, not a run folder", quote.Name(dir))
	}
	if _, err := os.Lstat(filepath.Join(dir, train.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
		return usagef("--resume %s: it has no %s, so it is not a run folder (or the run never started)", quote.Name(dir), train.ConfigFile)
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// checkDataPath explains a missing data file that no URL can fetch before
// training starts. A relative data.path is resolved against the current
// directory, not the config's, which surprises whoever runs a config from
// elsewhere: the message names the directory and, when the file exists
// relative to the config's folder or one above it, where to run from.
func checkDataPath(cfg *config.Config) error {
	if cfg.Data.Format == config.FormatTokens {
		if cfg.Data.Prepare != "" {
			return nil // made when missing (nanogpt.LoadData)
		}
		for _, path := range []string{cfg.Data.Path, cfg.Data.ValPath} {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return &tokenfile.Error{Path: path, Problem: "does not exist and [data] prepare is not set" + missingHint(cfg, path) +
					"; gptg data prepare makes token files"}
			}
		}
		return nil
	}
	path := cfg.Data.Path
	if _, ok := builtin.Parse(path); ok || cfg.Data.URL != "" {
		return nil // built in (config checked the name), or downloaded when missing
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil // present, or a different problem that loading reports
	}
	return fmt.Errorf("data file %s does not exist and [data] url is not set%s", quote.Name(path), missingHint(cfg, path))
}

// missingHint says, of the missing file path that cfg names, where a
// relative path is resolved and where the file is ("" when absolute).
func missingHint(cfg *config.Config, path string) string {
	msg := ""
	if !filepath.IsAbs(path) {
		wd, _ := os.Getwd()
		msg += fmt.Sprintf(" (relative paths are resolved against the current directory %s, not the config's)", wd)
		if dir := findRelative(filepath.Dir(cfg.Path), path); dir != "" {
			msg += fmt.Sprintf("; it exists under %s: run gptg there", dir)
		}
	}
	if filepath.Base(path) == "toy.txt" {
		msg += fmt.Sprintf("; use the built-in one (data.path = \"builtin:toy\") or make it with: gptg data toy --out %s", quote.Name(path))
	}
	return msg
}

// findRelative returns the first of dir and its ancestors under which the
// relative path rel exists, or "".
func findRelative(dir, rel string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// refuseInitKind refuses an --init model of the other kind than the
// config describes: a language model for a translation config, or the
// other way round. A file that does not read is left to the run to name.
func refuseInitKind(path string, cfg *config.Config) error {
	meta, err := modelfile.ReadMeta(path, modelfile.Limits{}) // the header only
	if err != nil {
		return nil
	}
	kind := map[bool]string{false: "a language model (decoder-only)", true: "a translation model (encoder-decoder)"}
	if file := translate.IsTranslation(meta); file != cfg.Model.EncoderDecoder() {
		return usagef("--init %s is %s, and %s describes %s: start from a model trained from a config like it", path, kind[file], cfg.Path, kind[!file])
	}
	return nil
}
