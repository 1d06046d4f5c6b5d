package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
)

// Every output flag (data --out, graph --dot, attention --out, import
// --out) goes through checkOutput before the command does its work and
// through writeOutput at the end: "-" and /dev/stdout are standard output,
// a link is written through, a device, FIFO or folder is refused, and an
// existing file is replaced only when it is one the command writes itself
// (a picture over a picture), never an input or anything else without
// --force. The rule itself is atomicfile's (Target, Check).

// forceUsage is the --force line of the commands with an output flag.
const forceUsage = `  --force                  replace an existing output file that is not one
                           this command wrote (a model, a corpus, an input)
`

// checkOutput applies atomicfile.Check to the value of flag; a refusal is
// a usage error.
func checkOutput(flag, path string, r atomicfile.Rules) error {
	err := atomicfile.Check(path, r)
	var ae *atomicfile.Error
	if errors.As(err, &ae) {
		return usageError{flag + " " + ae.Error()}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, quote.Name(path), err)
	}
	return nil
}

// writeOutput writes what write produces to stdout when path asks for it,
// otherwise atomically to path.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if atomicfile.IsStdout(path) {
		w := bufio.NewWriter(stdout)
		if err := write(w); err != nil {
			return err
		}
		return w.Flush()
	}
	if err := atomicfile.Write(path, write); err != nil {
		// The path in an *os.PathError is atomicfile's temporary file, a
		// name the user never asked for; say which file failed instead.
		var pe *os.PathError
		var ae *atomicfile.Error
		switch {
		case errors.As(err, &ae):
			return err
		case errors.As(err, &pe):
			err = pe.Err
		}
		return fmt.Errorf("writing %s: %w", quote.Name(path), err)
	}
	return nil
}

// wrote says on stdout that path was written, unless stdout was the output.
func wrote(stdout io.Writer, path, format string, args ...any) {
	if atomicfile.IsStdout(path) {
		return
	}
	fmt.Fprintf(stdout, "wrote %s"+format+"\n", append([]any{quote.Name(path)}, args...)...)
}
