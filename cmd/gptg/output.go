package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gptg/gptg/internal/atomicfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/train"
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

// checkOutputFolder refuses, as a usage error, a folder output flag
// (ablate --out, data pairs --out, a sweep's out) naming standard output,
// the filesystem root (a link to it too), something that exists and is
// not a folder, or — unless runsOK — a run folder; what says what the
// command writes into it.
func checkOutputFolder(flag, path, what string, runsOK bool) error {
	if atomicfile.IsStdout(path) {
		return usagef("%s %s: %s, not standard output", flag, quote.Name(path), what)
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real // a link to / is /
		}
		if filepath.Dir(abs) == abs {
			return usagef("%s %s: is the filesystem root; %s: choose a folder of its own", flag, quote.Name(path), what)
		}
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && !info.IsDir():
		return usagef("%s %s: exists and is not a folder; %s", flag, quote.Name(path), what)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return usagef("%s %s: %v", flag, quote.Name(path), unwrapPath(err))
	case err == nil && !runsOK:
		for _, name := range []string{train.ConfigFile, train.ModelFile} {
			if _, err := os.Lstat(filepath.Join(path, name)); err == nil {
				return usagef("%s %s: is a run folder (it holds %s); %s: choose another folder", flag, quote.Name(path), name, what)
			}
		}
	}
	return nil
}

// unwrapPath drops the *os.PathError around err, whose path the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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

// writeOutputMakingFolders is writeOutput into folders made for path when
// missing (data toy --out new/t.txt): when the write fails, the folders it
// made are removed again, so that a failed command leaves nothing behind.
func writeOutputMakingFolders(path string, stdout io.Writer, write func(io.Writer) error) error {
	if atomicfile.IsStdout(path) {
		return writeOutput(path, stdout, write)
	}
	made, err := makeFolders(filepath.Dir(path))
	if err != nil {
		return err
	}
	if err := writeOutput(path, stdout, write); err != nil {
		removeFolders(made)
		return err
	}
	return nil
}

// makeFolders is os.MkdirAll(dir) that returns the folders it made,
// outermost first; on error it removes them again.
func makeFolders(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break // there (a file there fails the Mkdir below), or the root
		}
		missing = append(missing, d)
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], 0o755)
		if errors.Is(err, fs.ErrExist) { // made meanwhile by someone else
			continue
		}
		if err != nil {
			removeFolders(made)
			return nil, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}

// removeFolders removes the folders makeFolders made, innermost first,
// each only if it is still empty.
func removeFolders(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		os.Remove(made[i])
	}
}

// wrote says on stdout that path was written, unless stdout was the output.
func wrote(stdout io.Writer, path, format string, args ...any) {
	if atomicfile.IsStdout(path) {
		return
	}
	fmt.Fprintf(stdout, "wrote %s"+format+"\n", append([]any{quote.Name(path)}, args...)...)
}
