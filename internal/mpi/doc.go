// Package mpi is the part of MPI that distributed training needs: the
// process's rank and the job's size, point-to-point sends of float64
// sums, a broadcast and a gather of bytes, a barrier and an abort.
//
// With the build tag mpi (go build -tags mpi) it calls Open MPI through
// cgo (comm_mpi.go); without it, the default build, it is pure Go and
// Init refuses (comm_stub.go), so that a plain go build needs neither MPI
// nor a C compiler. Why a binding of its own rather than an existing Go
// package: docs/architecture.md, "Training over MPI".
package mpi

import "errors"

// ErrNotBuilt is Init's error in a build without the mpi tag.
var ErrNotBuilt = errors.New("this gptg was built without MPI, so --distributed cannot run: build it with `go build -tags mpi ./cmd/gptg` (needs Open MPI's headers: apt-get install libopenmpi-dev) and start it with mpirun or srun")
