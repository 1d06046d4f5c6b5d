// Command tokbench times gptg's GPT-2 tokenizer on one corpus, for
// bench/tokenizers.sh: the first encoding in a fresh process (its cache of
// pieces starts empty, as for any text gptg reads once), on --workers
// goroutines (1: Encode; more: EncodeParallel), and the decoding of the
// ids. It prints one line: corpus bytes, tokens, seconds to build the
// tokenizer, to encode and to decode (the median of 5), then the CPU
// seconds (user and system, every thread of the process) of the encoding,
// of a decoding and of building the tokenizer: on a machine shared with
// other work, CPU time is what the load does not inflate.
//
//	GOMAXPROCS=1 go run ./bench/tokbench builtin:tinyshakespeare
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/gptg/gptg/bpe"
	"github.com/gptg/gptg/corpus/builtin"
)

func main() {
	workers := flag.Int("workers", 1, "goroutines encoding at once")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tokbench [--workers N] builtin:NAME|FILE")
		os.Exit(2)
	}
	text, err := read(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokbench:", err)
		os.Exit(1)
	}
	start, cpu := time.Now(), cpuTime()
	tok, err := bpe.GPT2()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokbench:", err)
		os.Exit(1)
	}
	build, buildCPU := time.Since(start), cpuTime()-cpu

	start, cpu = time.Now(), cpuTime()
	var ids []int
	if *workers > 1 {
		ids = tok.EncodeParallel(text, *workers)
	} else {
		ids = tok.Encode(text)
	}
	encode, encodeCPU := time.Since(start), cpuTime()-cpu

	var times, cpus []time.Duration
	out := make([]byte, 0, len(text))
	for range 5 {
		start, cpu = time.Now(), cpuTime()
		out = tok.AppendDecode(out[:0], ids)
		times, cpus = append(times, time.Since(start)), append(cpus, cpuTime()-cpu)
	}
	slices.Sort(times)
	slices.Sort(cpus)
	if string(out) != text {
		fmt.Fprintln(os.Stderr, "tokbench: decode(encode(text)) differs from the text")
		os.Exit(1)
	}
	fmt.Printf("%d %d %.6f %.6f %.6f %.6f %.6f %.6f\n", len(text), len(ids), build.Seconds(), encode.Seconds(), times[2].Seconds(),
		encodeCPU.Seconds(), cpus[2].Seconds(), buildCPU.Seconds())
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func read(path string) (string, error) {
	if name, ok := builtin.Parse(path); ok {
		f, err := builtin.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}
	b, err := os.ReadFile(path)
	return string(b), err
}
