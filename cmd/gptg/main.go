// Command gptg trains, samples and explains small transformer models on a
// CPU, of two architectures built by package graph: GPT language models
// and the encoder–decoder translation model of "Attention is all you
// need". Most commands take either (train, eval, inspect, graph,
// attention, ablate, serve); sample and import nanogpt are the GPT's,
// translate the encoder–decoder's.
//
// Each subcommand lives in its own file: train.go, graph.go, sample.go, ...
// This file dispatches, prints help and turns errors into exit codes:
// 2 for usage and config errors, 1 for failures at run time, 130 when a
// signal interrupted training.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/corpus"
	"github.com/gptg/gptg/graph"
	"github.com/gptg/gptg/hf"
	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/memlimit"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/nanogpt"
	"github.com/gptg/gptg/pairs"
	"github.com/gptg/gptg/tokenfile"
	"github.com/gptg/gptg/train"
)

// command is one subcommand: its one-line summary, its usage text and the
// function that runs it with the arguments after its name. A command
// writes only to the stdout and stderr it is given, never to os.Stdout,
// so that run can be called (and tested) with any writers.
type command struct {
	summary string
	usage   string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"train":     trainCommand,
		"graph":     graphCommand,
		"sample":    sampleCommand,
		"eval":      evalCommand,
		"inspect":   inspectCommand,
		"attention": attentionCommand,
		"ablate":    ablateCommand,
		"sweep":     sweepCommand,
		"serve":     serveCommand,
		"data":      dataCommand,
		"translate": translateCommand,
		"import":    importCommand,
		"version":   versionCommand,
		"plot":      plotCommand,
		"tokens":    tokensCommand,
		"export":    exportCommand,
	}
}

func main() {
	// Before anything is allocated: a soft memory limit below what the
	// process may take (ulimit -v/-d, its cgroups, the machine), unless
	// GOMEMLIMIT sets one, so that the garbage collector works harder
	// near it instead of the heap growing into the runtime's out-of-memory
	// trace.
	memlimit.SetSoftLimit()
	os.Exit(run(os.Args[1:], stdoutOf(os.Stdout), os.Stderr))
}

// envUnfused names the environment variable that, set to 1, makes every
// command build the unfused graph (graph.Backend.Unfused): the same model
// composed from Gorgonia primitives, several times slower, for comparisons
// such as GPTG_UNFUSED=1 bench/compare.sh.
const envUnfused = "GPTG_UNFUSED"

// backend is how this process's graphs compute: on threads goroutines
// (0 = every core) and fused unless the environment says otherwise. It is
// the one place that reads the environment; the library packages get the
// result as an argument.
func backend(threads int) graph.Backend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return graph.Backend{Unfused: unfused(), Threads: threads}
}

// unfused reports whether the environment asks for the unfused graph.
func unfused() bool { return os.Getenv(envUnfused) == "1" }

// threadsFlag adds --threads to a command's flags: 0 (every core) or a
// count of goroutines, refused when negative or absurd while parsing.
func threadsFlag(fs *flag.FlagSet) *int {
	n := new(int)
	fs.Var((*threadsValue)(n), "threads", "")
	return n
}

// maxThreads bounds --threads: far past any machine's cores.
const maxThreads = 4096

type threadsValue int

func (t *threadsValue) String() string { return strconv.Itoa(int(*t)) }
func (t *threadsValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxThreads {
		return fmt.Errorf("must be 0 (every core) or a number of threads up to %d", maxThreads)
	}
	*t = threadsValue(n)
	return nil
}

// threadsUsage is the --threads line of every command's help.
const threadsUsage = `  --threads N              cores to use (default all); the numbers are the
                           same for every N
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				fmt.Fprint(stdout, c.usage)
				return 0
			}
			fmt.Fprintf(stderr, "gptg: unknown command %s (see gptg help)\n", quote.Value(args[1]))
			return 2
		}
		printHelp(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gptg: unknown command %s%s (see gptg help)\n", quote.Value(args[0]), suggestCommand(args[0]))
		return 2
	}
	if err := checkWorkdir(args); err != nil {
		fmt.Fprintf(stderr, "gptg %s: %s\n", args[0], err)
		return 2
	}
	out := &checkedStdout{w: stdout}
	err := c.run(args[1:], out, stderr)
	if err == nil && printsResult[args[0]] {
		err = out.failed()
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, c.usage)
		return 0
	}
	if q := (quietError{}); errors.As(err, &q) {
		return exitCode(q.error) // another process said it (a distributed run's rank 0)
	}
	fmt.Fprintf(stderr, "gptg %s: %s\n", args[0], quote.Line(oneLine(err.Error()), maxMessage))
	return exitCode(err)
}

// maxMessage bounds an error line: the values in a message are quoted and
// cut where they are put in (quote.Value), and this is the last guard.
const maxMessage = 2000

// usageError marks a bad command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (see --help)" }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// refusedError marks work refused before it starts, its input not wrong
// but too large (a model for the memory limits): exit 2, without usage's
// "(see --help)".
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }

// interruptedError marks a run stopped by a signal after saving (exit 130).
type interruptedError struct{ error }

func exitCode(err error) int {
	var ue usageError
	var ce *config.Error
	var ie interruptedError
	var re refusedError
	var ne *nanogpt.InputError
	var he *hf.InputError
	var pe *pairs.Error
	var cc *train.CorpusChangedError // a run's corpus edited since training
	var fe *inputfile.Error          // a FIFO, device or /proc file named as an input
	var me *config.MemoryError       // a model too large for the limits, refused unbuilt
	var xe *train.ExistingRunError   // train.out holds a run already
	var te *tokenfile.Error          // a token file of odd length, with ids past the vocabulary, ...
	var ie2 inputError               // a text that is not what it must be (tokens)
	switch {
	case errors.As(err, &ie):
		return 130
	case errors.Is(err, corpus.ErrNotUTF8): // a corpus, prompt or text file that is not text
		return 2
	case errors.As(err, &ue), errors.As(err, &ce), errors.As(err, &ne), errors.As(err, &he), errors.As(err, &pe), errors.As(err, &cc), errors.As(err, &fe),
		errors.As(err, &me), errors.As(err, &re), errors.As(err, &xe), errors.As(err, &te), errors.As(err, &ie2):
		return 2
	}
	return 1
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `gptg trains and samples small GPT language models on a CPU, one static
Gorgonia graph per model. Configs (TOML) describe the data, the model's
switches (mask, Q/K/V, heads, residuals, norms) and the training.

Usage: gptg <command> [arguments]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Run "gptg help <command>" or "gptg <command> --help" for its flags.

Exit codes: 0 ok, 1 run-time failure, 2 bad usage or config, 130 interrupted.
`)
}

func suggestCommand(s string) string {
	names := slices.Sorted(maps.Keys(commands))
	for _, n := range names {
		if strings.HasPrefix(n, s) || strings.HasPrefix(s, n) {
			return fmt.Sprintf("; did you mean %q?", n)
		}
	}
	if g := config.Suggest(s, names); g != "" {
		return fmt.Sprintf("; did you mean %q?", g)
	}
	return ""
}

// parseFlags parses flags that may come before, between or after the
// positional arguments (gptg sample MODEL --prompt X), which the flag
// package alone stops at. It returns the positional arguments.
//
// For commands with --set, nanoGPT's style --train.epochs=0.1 (a flag
// whose name holds a dot) is taken as --set train.epochs=0.1.
func parseFlags(fs *flag.FlagSet, args []string, notes io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard) // errors are reported once, by run
	args, err := nanoGPTFlags(fs, args, notes)
	if err != nil {
		return nil, err
	}
	args, err = rewriteSetFlags(fs, args)
	if err != nil {
		return nil, err
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{doubleDash(err.Error()) + suggestFlag(fs, err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagName matches a flag as Go's flag package writes it in its errors
// ("flag provided but not defined: -sett", "invalid value "x" for flag
// -tokens"): one dash, after a space or at the start.
var flagName = regexp.MustCompile(`(^|\s)-([A-Za-z][A-Za-z0-9_.-]*)`)

// doubleDash writes the flags in a flag package error as the help and the
// docs write them, --threads, not -threads.
func doubleDash(msg string) string {
	return flagName.ReplaceAllString(msg, "${1}--${2}")
}

// rewriteSetFlags turns --section.key=value (and --section.key value)
// into --set section.key=value when fs has --set, and refuses a --set
// whose value lacks the =, which would otherwise leave the value behind
// as a stray positional argument and a puzzling message about it.
func rewriteSetFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	if fs.Lookup("set") == nil {
		return args, nil
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		isFlag := strings.HasPrefix(a, "-") && len(a) > 1
		switch {
		case isFlag && name == "set":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, usagef("--set needs section.key=value")
				}
				i++
				value = args[i]
			}
			if !strings.Contains(value, "=") {
				hint := value + "=VALUE"
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					hint = value + "=" + args[i+1]
				}
				return nil, usagef("--set needs section.key=value, got %q: write --set %s", value, hint)
			}
			out = append(out, "--set", value)
		case isFlag && strings.Contains(name, ".") && name[0] >= 'a' && name[0] <= 'z': // not -0.5
			if !hasValue {
				if i+1 >= len(args) {
					return nil, usagef("--%s needs a value: --%s=VALUE or --set %s=VALUE", name, name, name)
				}
				i++
				value = args[i]
			}
			out = append(out, "--set", name+"="+value)
		default:
			out = append(out, a)
		}
	}
	return out, nil
}

// suggestFlag adds "; did you mean --X?" to the flag package's
// "flag provided but not defined: -sett" when a defined flag is close.
func suggestFlag(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if g := config.Suggest(name, names); g != "" {
		return fmt.Sprintf("; did you mean --%s?", g)
	}
	// A setting of the config written as a flag (--max-steps): point to
	// --set with the key's spelling.
	if fs.Lookup("set") != nil {
		key := strings.ReplaceAll(strings.SplitN(name, "=", 2)[0], "-", "_")
		for _, k := range config.Keys() {
			if _, short, _ := strings.Cut(k, "."); short == key || k == key {
				return fmt.Sprintf("; it is a setting of the config: --set %s=V", k)
			}
		}
	}
	return ""
}

// setFlags collects repeatable --set section.key=value overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// checkWorkdir refuses to run a command from a folder that was removed
// after the shell entered it: every relative path (configs, corpora, run
// folders, outputs) would fail with "getwd: no such file or directory" or
// a bare "no such file or directory" naming a file that is right there in
// the listing the user remembers. Help and version need no folder.
func checkWorkdir(args []string) error {
	if args[0] == "version" || slices.ContainsFunc(args[1:], func(a string) bool {
		return a == "-h" || a == "--help" || a == "-help"
	}) {
		return nil
	}
	if _, err := os.Getwd(); err != nil {
		return fmt.Errorf("the current folder no longer exists (it was removed while this shell was in it): cd to a folder that exists (%v)", unwrapPath(err))
	}
	return nil
}
