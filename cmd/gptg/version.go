package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

var versionCommand = command{
	summary: "print gptg's version and the source revision it was built from",
	usage: `Usage: gptg version   (or gptg --version)

Prints the module version and, when the binary was built inside a git
checkout, the commit it was built from (with "+dirty" when the work tree
had changes), as recorded by the Go toolchain in the binary.
`,
	run: runVersion,
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	pos, err := parseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("version takes no arguments")
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("the binary carries no build information")
	}
	fmt.Fprintf(stdout, "gptg %s\n", versionLine(info))
	return nil
}

// versionLine is the module version (v1.2.3, or "(devel)" for a build from
// a checkout) followed by what the toolchain stamped about the commit.
// `go build -buildvcs=false` (or a build outside git) stamps nothing, and
// the line says so rather than printing an empty revision.
func versionLine(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	line := info.Main.Version
	if line == "" {
		line = "(unknown version)"
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return line + ", revision unknown (built without VCS information), " + info.GoVersion
	}
	if settings["vcs.modified"] == "true" {
		rev += "+dirty"
	}
	if t := settings["vcs.time"]; t != "" {
		rev += " (" + t + ")"
	}
	return line + ", revision " + rev + ", " + info.GoVersion
}
