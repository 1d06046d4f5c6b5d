package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gptg/gptg/ablate"
	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/mpi"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/sweep"
)

var sweepCommand = command{
	summary: "a grid of configs × settings × seeds: manifest, run entries, Slurm/Kubernetes, collect",
	usage: `Usage:
  gptg sweep SWEEP.toml [--out DIR]      expand the grid into a sweep folder
  gptg sweep run DIR [--index I] [--jobs N] [--retry-failed] [--ranks R]
  gptg sweep collect DIR [--baseline NAME]
  gptg sweep emit slurm DIR [--parallel K] [--cpus C] [--memory G] [--time T] [--partition P] [--ranks R]
  gptg sweep emit k8s DIR --claim PVC [--image IMAGE] [--mount PATH] [--parallel K] [--cpus C] [--memory G]

A sweep file names configs, --set values and seeds:

  configs = ["../configs/ablation/2-causal.toml", "../configs/ablation/3-qkv.toml"]
  seeds = 2                     # seeds 1..2, or a list [1, 2, 42]
  out = "runs/sweep-lr"         # the sweep folder (default runs/<file name>)
  baseline = "3-qkv train.lr=0.001"   # optional; default the first variant
  [set]
  "train.lr" = [3e-4, 1e-3]     # a list: one run per value
  "train.epochs" = 0.5          # one value: every run

Config paths are relative to the sweep file. "gptg sweep SWEEP.toml" writes
DIR/manifest.jsonl, one line per run (index, variant, config, overrides,
seed, run folder), configs first, then the [set] values (first key
slowest), then seeds; nothing is trained.

run: trains entry I (default: $SLURM_ARRAY_TASK_ID, then
  $JOB_COMPLETION_INDEX; without any, every entry, N at once). A finished
  run is skipped, an interrupted one resumed, one whose last attempt failed
  (DIR/failed/I.txt) is skipped unless --retry-failed. Every start, resume
  and end is a line in DIR/events.log. gptg train's lock on the run folder
  keeps two tasks from training one run at once.
collect: the table and plot of whatever has finished (as gptg ablate
  writes them: summary.md, summary.csv, runs.csv, loss.png in DIR), listing
  runs not finished and failed.
emit slurm: writes DIR/sweep.sbatch, a job array with one task per entry
  (--array=0-(N-1)%K), one log per task in DIR/logs, GOMAXPROCS from
  SLURM_CPUS_PER_TASK, requeueable. Tasks run in the current folder, which
  every node must see at the same path (a shared filesystem).
emit k8s: writes DIR/job.yaml, a batch/v1 Indexed Job (completions N,
  parallelism K) whose pods mount the claim at PATH (default /work) and run
  there; the claim must hold this folder's content (sources, configs, data,
  DIR), shared by the nodes (ReadWriteMany) when pods run on several. Without
  --image the pods run the stock Go image and build gptg from the sources.
Both ask for --memory per task: by default the largest training estimate
  among the runs plus a quarter (at least 0.5 GiB).

Flags:
  --out DIR         the sweep folder (gptg sweep SWEEP.toml; default the file's out)
  --index I         the entry to run (run)
  --jobs N          runs at once when running every entry (default 1)
  --retry-failed    run entries whose last attempt failed (run)
  --ranks R         train each entry on R MPI ranks: mpirun -np R gptg train
                    --distributed (run; a gptg built with -tags mpi); with
                    emit slurm, each array task is a job of R tasks, --cpus
                    and --memory per rank (docs/experiments.md)
  --baseline NAME   the variant the others are compared with (collect)
  --parallel K      tasks or pods at once (emit; default all)
  --cpus C          CPUs per task or pod (emit; default 1)
  --time T          Slurm --time limit, e.g. 1:00:00 (emit slurm)
  --partition P     Slurm partition (emit slurm)
  --gptg PATH       the gptg binary the tasks run (emit slurm; default this one)
  --memory G        GiB per task or pod (emit; default from the runs' estimates)
  --image IMAGE     container image with gptg on its PATH (emit k8s; default
                    golang:1.26-bookworm, which builds gptg first)
  --claim PVC       PersistentVolumeClaim holding the project folder (emit k8s)
  --mount PATH      where the claim is mounted (emit k8s; default /work)
`,
	run: runSweep,
}

func runSweep(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("sweep needs a SWEEP.toml file or one of run, collect, emit")
	}
	switch args[0] {
	case "run":
		return sweepRun(args[1:], stdout, stderr)
	case "collect":
		return sweepCollect(args[1:], stdout, stderr)
	case "emit":
		return sweepEmit(args[1:], stdout, stderr)
	case "-h", "--help", "-help":
		return flag.ErrHelp
	}
	return sweepCreate(args, stdout, stderr)
}

// sweepErr makes the sweep package's input errors usage errors (exit 2).
func sweepErr(err error) error {
	var se *sweep.Error
	if errors.As(err, &se) {
		return usageError{se.Msg}
	}
	return err
}

func sweepCreate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	out := fs.String("out", "", "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("sweep needs exactly one SWEEP.toml file (or run, collect, emit)")
	}
	plan, err := sweep.Parse(pos[0])
	if err != nil {
		return sweepErr(err)
	}
	if *out != "" {
		plan.Out = *out
	}
	if err := checkOutputFolder("out", plan.Out, "a sweep writes a folder of its manifest and run folders", false); err != nil {
		return err
	}
	entries, err := sweep.Create(plan)
	if err != nil {
		return sweepErr(err)
	}
	fmt.Fprintf(stdout, "sweep of %d runs in %s (%s)\n", len(entries), plan.Out, filepath.Join(plan.Out, sweep.ManifestFile))
	fmt.Fprintf(stdout, "next: gptg sweep run %s --jobs 2   (all here), or gptg sweep emit slurm|k8s %s; then gptg sweep collect %s\n", plan.Out, plan.Out, plan.Out)
	return nil
}

func sweepDir(pos []string, what string) (string, error) {
	if len(pos) != 1 {
		return "", usagef("sweep %s needs exactly one sweep folder", what)
	}
	if st, err := os.Stat(pos[0]); err != nil || !st.IsDir() {
		return "", usagef("sweep folder %s: no such folder", pos[0])
	}
	return pos[0], nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

func sweepRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep run", flag.ContinueOnError)
	index := fs.Int("index", -1, "")
	jobs := fs.Int("jobs", 1, "")
	retry := fs.Bool("retry-failed", false, "")
	ranks := fs.Int("ranks", 1, "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	dir, err := sweepDir(pos, "run")
	if err != nil {
		return err
	}
	if *jobs < 1 || *jobs > 64 {
		return usagef("--jobs %d must be between 1 and 64", *jobs)
	}
	if *ranks < 1 || *ranks > maxRanks {
		return usagef("--ranks %d must be between 1 and %d", *ranks, maxRanks)
	}
	var launch []string
	if *ranks > 1 {
		if !mpi.Built {
			return refusedError{mpi.ErrNotBuilt}
		}
		launch = []string{"mpirun", "-np", strconv.Itoa(*ranks)}
	}
	indexSet := false
	fs.Visit(func(f *flag.Flag) { indexSet = indexSet || f.Name == "index" })
	from := "--index"
	if indexSet && *index < 0 {
		return usagef("--index %d: entries are numbered from 0", *index)
	}
	if !indexSet {
		i, name, ok, err := sweep.IndexFromEnv()
		if err != nil {
			return sweepErr(err)
		}
		if ok {
			*index, from = i, name
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the gptg binary: %w", err)
	}
	ctx, stop := signalContext()
	defer stop()
	if *index >= 0 {
		fmt.Fprintf(stdout, "sweep %s: entry %d (from %s)\n", dir, *index, from)
	}
	results, err := sweep.Run(ctx, dir, sweep.RunOptions{Index: *index, Jobs: *jobs, RetryFailed: *retry, Exe: exe, Launch: launch,
		Log: stdout, ProgressEvery: 30 * time.Second, Backend: backend(0)})
	if results == nil {
		return sweepErr(err)
	}
	if errors.Is(err, context.Canceled) {
		return interruptedError{fmt.Errorf("interrupted: the same command resumes the unfinished runs")}
	}
	if err != nil {
		return err
	}
	failed, busy := 0, 0
	for _, r := range results {
		switch {
		case ablate.Busy(r.Err):
			busy++
		case r.Status == ablate.Failed:
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (their errors are in %s)", failed, len(results), filepath.Join(dir, sweep.FailedDir))
	}
	if busy > 0 {
		return fmt.Errorf("another process is already training %d of the %d runs; none was started twice", busy, len(results))
	}
	return nil
}

func sweepCollect(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep collect", flag.ContinueOnError)
	baseline := fs.String("baseline", "", "")
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	dir, err := sweepDir(pos, "collect")
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the gptg binary: %w", err)
	}
	ctx, stop := signalContext()
	defer stop()
	results, err := sweep.Collect(ctx, dir, *baseline, exe, stdout, backend(0))
	if results == nil {
		return sweepErr(err)
	}
	if errors.Is(err, context.Canceled) {
		return interruptedError{fmt.Errorf("interrupted while measuring; run the same command again")}
	}
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, ablate.Markdown(ablate.Rows(results, *baseline)))
	fmt.Fprintf(stdout, "\nwrote %s, %s, %s and %s\n", filepath.Join(dir, "summary.md"), filepath.Join(dir, "summary.csv"),
		filepath.Join(dir, "runs.csv"), filepath.Join(dir, "loss.png"))
	// A partial table is what collect is for: missing runs are listed, not an error.
	return nil
}

// sweepMemory is the memory a task asks for: the largest training estimate
// of the sweep's runs (config.TrainMemory: graphs, and the corpus when its
// file is here to measure), with a quarter more for the process running it
// (a job's limit counts the runtime too), at least 512 MiB, in MiB. An entry whose config
// does not load is left out: running it will say what is wrong.
func sweepMemory(dir string, entries []sweep.Entry) int {
	most := 0.0
	for _, e := range entries {
		spec := e.Spec(dir)
		c, err := config.Load(spec.Config, spec.Sets)
		if err != nil {
			continue
		}
		most = max(most, c.TrainMemory().Total())
	}
	mib := int(math.Ceil(most * 1.25 / (1 << 20)))
	return max(512, (mib+255)/256*256)
}

func sweepEmit(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "slurm" && args[0] != "k8s") {
		return usagef("sweep emit needs slurm or k8s, then the sweep folder")
	}
	engine := args[0]
	fs := flag.NewFlagSet("sweep emit", flag.ContinueOnError)
	parallel := fs.Int("parallel", 0, "")
	cpus := fs.Int("cpus", 1, "")
	timeLimit := fs.String("time", "", "")
	partition := fs.String("partition", "", "")
	gptgPath := fs.String("gptg", "", "")
	image := fs.String("image", "", "")
	claim := fs.String("claim", "", "")
	mount := fs.String("mount", "/work", "")
	memory := fs.Float64("memory", 0, "")
	ranks := fs.Int("ranks", 1, "")
	pos, err := parseFlags(fs, args[1:], stderr)
	if err != nil {
		return err
	}
	dir, err := sweepDir(pos, "emit "+engine)
	if err != nil {
		return err
	}
	switch {
	case *parallel < 0:
		return usagef("--parallel %d must be positive (or 0 for all)", *parallel)
	case *cpus < 1 || *cpus > 256:
		return usagef("--cpus %d must be between 1 and 256", *cpus)
	case *ranks < 1 || *ranks > maxRanks:
		return usagef("--ranks %d must be between 1 and %d", *ranks, maxRanks)
	case *ranks > 1 && engine != "slurm":
		return usagef("--ranks is for emit slurm: a Kubernetes MPIJob runs a distributed training (docs/experiments.md)")
	case !(*memory == 0 || *memory >= 0.25 && *memory <= 1<<20): // NaN too: it reached the script as --mem=-9223372036854775808M
		return usagef("--memory %v must be a number of GiB from 0.25 to 1048576 (or 0: from the runs' estimates)", *memory)
	}
	entries, err := sweep.Load(dir)
	if err != nil {
		return sweepErr(err)
	}
	memMiB := int(math.Ceil(*memory * 1024))
	if *memory == 0 {
		memMiB = sweepMemory(dir, entries)
	} else if *memory < 0.25 {
		return usagef("--memory %v GiB is less than a run needs to start (0.25)", *memory)
	}
	var text []byte
	var path string
	switch engine {
	case "slurm":
		if *ranks > 1 && *gptgPath == "" && !mpi.Built {
			return refusedError{fmt.Errorf("--ranks %d: %w; or name an MPI build with --gptg PATH", *ranks, mpi.ErrNotBuilt)}
		}
		text, path, err = emitSlurm(dir, sweep.SlurmOptions{Parallel: *parallel, CPUs: *cpus, Time: *timeLimit,
			Partition: *partition, Gptg: *gptgPath, MemoryMiB: memMiB, Ranks: *ranks}, len(entries))
	case "k8s":
		text, path, err = emitK8s(dir, sweep.K8sOptions{Image: *image, Claim: *claim, MountPath: *mount,
			Entries: len(entries), Parallel: *parallel, CPUs: *cpus, MemoryMiB: memMiB})
	}
	if err != nil {
		return err
	}
	if err := atomicfile.WriteOwnFile(path, text); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d entries)\n", path, len(entries))
	return nil
}

// emitSlurm is the batch script of the sweep in dir, of entries tasks:
// o without Workdir (the current folder), Gptg defaulting to this binary.
func emitSlurm(dir string, o sweep.SlurmOptions, entries int) (text []byte, path string, err error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	if o.Workdir, err = os.Getwd(); err != nil {
		return nil, "", err
	}
	if o.Gptg == "" {
		if o.Gptg, err = os.Executable(); err != nil {
			return nil, "", fmt.Errorf("finding the gptg binary: %w", err)
		}
	}
	text, err = sweep.Slurm(absDir, entries, o)
	if err != nil {
		return nil, "", sweepErr(err)
	}
	// Slurm does not create the folder of --output: a missing one
	// makes every task fail before it starts.
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, "", fmt.Errorf("sweep folder: %w", err)
	}
	return text, filepath.Join(dir, "sweep.sbatch"), nil
}

// emitK8s is the Job of the sweep in dir: o without Dir (dir, relative
// to the current folder, which the pods find on the volume).
func emitK8s(dir string, o sweep.K8sOptions) (text []byte, path string, err error) {
	if o.Claim == "" {
		return nil, "", usagef("sweep emit k8s needs --claim (the volume holding this folder)")
	}
	if !filepath.IsAbs(o.MountPath) {
		return nil, "", usagef("--mount %s must be an absolute path", o.MountPath)
	}
	// Kubernetes refuses a mount path with a .. element, and a claim
	// mounted over / would hide the image the pod runs.
	if slices.Contains(strings.Split(o.MountPath, "/"), "..") {
		return nil, "", usagef("--mount %s: Kubernetes refuses a mount path with a .. in it", quote.Value(o.MountPath))
	}
	if o.MountPath = filepath.Clean(o.MountPath); o.MountPath == "/" {
		return nil, "", usagef("--mount /: the claim would hide the container's own files; give a folder such as /work")
	}
	if strings.ContainsAny(o.Image, " \t") {
		return nil, "", usagef("--image %s: an image reference holds no spaces", quote.Value(o.Image))
	}
	rel := filepath.Clean(dir)
	if filepath.IsAbs(rel) {
		wd, _ := os.Getwd()
		if r, err := filepath.Rel(wd, rel); err == nil && filepath.IsLocal(r) {
			rel = r
		}
	}
	if !filepath.IsLocal(rel) {
		return nil, "", usagef("sweep folder %s must lie inside the current folder, which the pods find on the volume", dir)
	}
	o.Dir = filepath.ToSlash(rel)
	if text, err = sweep.K8s(o); err != nil {
		return nil, "", sweepErr(err)
	}
	return text, filepath.Join(dir, "job.yaml"), nil
}
