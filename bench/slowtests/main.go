// Command slowtests reads the output of `go test -json` and prints where
// the suite's time went: the packages by wall time, the slowest tests
// (top-level tests and, indented, their slowest subtests), and the wall
// time from the first event to the last. bench/slowtests.sh runs the
// suite and feeds it here.
//
//	go test -json ./... | go run ./bench/slowtests [-n 25]
//	go run ./bench/slowtests -n 25 < saved.json
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of test2json's output.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// timing is one finished package or test.
type timing struct {
	pkg, test string
	secs      float64
	failed    bool
}

func main() {
	n := flag.Int("n", 25, "how many tests to list")
	sub := flag.Int("sub", 2, "how many subtests to list under each test")
	flag.Parse()
	if err := report(os.Stdin, os.Stdout, *n, *sub); err != nil {
		fmt.Fprintln(os.Stderr, "slowtests:", err)
		os.Exit(1)
	}
}

func report(r io.Reader, w io.Writer, n, sub int) error {
	var pkgs, tests []timing
	subs := map[string][]timing{} // by package and top-level test
	var first, last time.Time
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // build output and the like: not an event
		}
		if !e.Time.IsZero() {
			if first.IsZero() || e.Time.Before(first) {
				first = e.Time
			}
			if e.Time.After(last) {
				last = e.Time
			}
		}
		if e.Action != "pass" && e.Action != "fail" {
			continue
		}
		t := timing{pkg: short(e.Package), test: e.Test, secs: e.Elapsed, failed: e.Action == "fail"}
		switch top, _, isSub := strings.Cut(e.Test, "/"); {
		case e.Test == "":
			pkgs = append(pkgs, t)
		case isSub:
			subs[t.pkg+" "+top] = append(subs[t.pkg+" "+top], t)
		default:
			tests = append(tests, t)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(pkgs) == 0 {
		return fmt.Errorf("no package finished in the input (is it go test -json's?)")
	}
	bySecs := func(ts []timing) {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].secs > ts[j].secs })
	}
	bySecs(pkgs)
	bySecs(tests)
	var sum float64
	for _, p := range pkgs {
		sum += p.secs
	}
	fmt.Fprintf(w, "wall time %.0f s from the first event to the last; packages' own times add up to %.0f s\n\n", last.Sub(first).Seconds(), sum)
	fmt.Fprintf(w, "%8s  %s\n", "seconds", "package")
	for _, p := range pkgs {
		if p.secs < 1 {
			continue
		}
		fmt.Fprintf(w, "%8.1f  %s%s\n", p.secs, p.pkg, failMark(p))
	}
	fmt.Fprintf(w, "\n%8s  %s\n", "seconds", "test")
	for i, t := range tests {
		if i == n {
			break
		}
		fmt.Fprintf(w, "%8.1f  %s %s%s\n", t.secs, t.pkg, t.test, failMark(t))
		ss := subs[t.pkg+" "+t.test]
		bySecs(ss)
		for j, s := range ss {
			if j == sub || s.secs < 1 {
				break
			}
			fmt.Fprintf(w, "%8.1f      %s%s\n", s.secs, s.test[len(t.test):], failMark(s))
		}
	}
	return nil
}

// short is a package's path without the module's.
func short(pkg string) string {
	if s, ok := strings.CutPrefix(pkg, "github.com/gptg/gptg/"); ok {
		return s
	}
	return pkg
}

func failMark(t timing) string {
	if t.failed {
		return "  FAIL"
	}
	return ""
}
