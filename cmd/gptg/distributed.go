package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gptg/gptg/config"
	"github.com/gptg/gptg/internal/mpi"
	"github.com/gptg/gptg/train"
)

// maxRanks bounds --ranks of sweep run and emit: far past any cluster a
// sweep entry would use.
const maxRanks = 4096

// joinJob starts MPI for --distributed: every process mpirun or srun
// started calls it. A build without the mpi tag refuses (exit 2).
func joinJob() (*mpi.Comm, error) {
	c, err := mpi.Init()
	if errors.Is(err, mpi.ErrNotBuilt) {
		return nil, refusedError{err}
	}
	return c, err
}

// quietError ends a rank other than 0 with rank 0's exit code and no line
// of its own: rank 0 says what went wrong, once for the job.
type quietError struct{ error }

// rankError is what a rank's error becomes: rank 0's as it is; another
// rank's quiet when rank 0 says the same (a mismatch, a setting, an
// interrupt the ranks agreed on), else named by its rank.
func rankError(c *mpi.Comm, err error) error {
	var jm *train.JobMismatchError
	var ce *config.Error
	var ie interruptedError
	switch {
	case errors.As(err, &jm):
		err = refusedError{err}
	case errors.As(err, &ce), errors.As(err, &ie):
	case err != nil && c.Rank() != 0:
		return fmt.Errorf("rank %d: %w", c.Rank(), err)
	}
	if err != nil && c.Rank() != 0 {
		return quietError{err}
	}
	return err
}

// distribute makes opts one rank's: the others print nothing (rank 0
// speaks for the job) and rank 0 gets the line for a job whose other
// ranks are gone.
func distribute(opts *train.Options, c *mpi.Comm, stderr io.Writer) {
	opts.Comm = c
	if c.Rank() != 0 {
		opts.Log, opts.Progress = discard{}, false
	}
	opts.RanksLost = func(msg string) {
		fmt.Fprintf(stderr, "gptg train: %s\n", msg)
		os.Exit(1)
	}
}

// finishJob ends MPI in this process after the run. A failed rank exits
// without MPI_Finalize, which would wait for ranks that may be waiting on
// it: mpirun or srun sees the exit and ends the job.
func finishJob(c *mpi.Comm, err error) error {
	if err == nil {
		if ferr := c.Finalize(); ferr != nil {
			return ferr
		}
		return nil
	}
	return rankError(c, err)
}
