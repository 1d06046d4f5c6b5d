//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <mpi.h>

// Open MPI's handles are macros over addresses of globals, which cgo
// cannot name; these functions hand them over.
static MPI_Comm world(void) { return MPI_COMM_WORLD; }
static MPI_Datatype u8(void) { return MPI_BYTE; }
static int threadSerialized(void) { return MPI_THREAD_SERIALIZED; }

static int initSerialized(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Built reports whether this binary can run over MPI.
const Built = true

// Comm is the job's processes (MPI_COMM_WORLD). Its methods must be
// called by one goroutine at a time (MPI_THREAD_SERIALIZED: the goroutine
// may move between OS threads, which MPI_THREAD_FUNNELED would forbid).
type Comm struct{ rank, size int }

// Init starts MPI. Under mpirun or srun every process of the job calls it.
func Init() (*Comm, error) {
	var provided C.int
	if rc := C.initSerialized(&provided); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("MPI_Init_thread failed (code %d)", int(rc))
	}
	if provided < C.threadSerialized() {
		return nil, fmt.Errorf("this MPI library serialises calls from one thread only (thread level %d): gptg's goroutines move between threads", int(provided))
	}
	var rank, size C.int
	if err := check("MPI_Comm_rank", C.MPI_Comm_rank(C.world(), &rank)); err != nil {
		return nil, err
	}
	if err := check("MPI_Comm_size", C.MPI_Comm_size(C.world(), &size)); err != nil {
		return nil, err
	}
	return &Comm{rank: int(rank), size: int(size)}, nil
}

func check(call string, rc C.int) error {
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("%s failed (code %d)", call, int(rc))
	}
	return nil
}

// Rank is this process's number, 0 to Size()-1.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in the job.
func (c *Comm) Size() int { return c.size }

// maxCount bounds one MPI call's element count (an int in C).
const maxCount = 1 << 30

// Send sends buf to process to (blocking until buf may be reused).
func (c *Comm) Send(buf []byte, to int) error {
	for len(buf) > 0 {
		n := min(len(buf), maxCount)
		if err := check("MPI_Send", C.MPI_Send(unsafe.Pointer(&buf[0]), C.int(n), C.u8(), C.int(to), 0, C.world())); err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

// Recv fills buf from process from, which sent exactly len(buf) bytes.
func (c *Comm) Recv(buf []byte, from int) error {
	for len(buf) > 0 {
		n := min(len(buf), maxCount)
		if err := check("MPI_Recv", C.MPI_Recv(unsafe.Pointer(&buf[0]), C.int(n), C.u8(), C.int(from), 0, C.world(), C.MPI_STATUS_IGNORE)); err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

// Bcast copies root's buf into every other process's buf (same length).
func (c *Comm) Bcast(buf []byte, root int) error {
	for len(buf) > 0 {
		n := min(len(buf), maxCount)
		if err := check("MPI_Bcast", C.MPI_Bcast(unsafe.Pointer(&buf[0]), C.int(n), C.u8(), C.int(root), C.world())); err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

// Gather puts every process's send (all of one length) into root's recv,
// in rank order; recv is read on root only and must hold Size()·len(send).
func (c *Comm) Gather(send, recv []byte, root int) error {
	if len(send) == 0 || len(send) > maxCount {
		return fmt.Errorf("MPI_Gather of %d bytes: not supported", len(send))
	}
	var r unsafe.Pointer
	if c.rank == root {
		if len(recv) != c.size*len(send) {
			return fmt.Errorf("MPI_Gather: %d bytes for %d processes of %d", len(recv), c.size, len(send))
		}
		r = unsafe.Pointer(&recv[0])
	}
	return check("MPI_Gather", C.MPI_Gather(unsafe.Pointer(&send[0]), C.int(len(send)), C.u8(), r, C.int(len(send)), C.u8(), C.int(root), C.world()))
}

// Barrier returns once every process has called it.
func (c *Comm) Barrier() error { return check("MPI_Barrier", C.MPI_Barrier(C.world())) }

// Abort ends every process of the job with code.
func (c *Comm) Abort(code int) { C.MPI_Abort(C.world(), C.int(code)) }

// Finalize ends MPI in this process; every process calls it before exiting.
func (c *Comm) Finalize() error { return check("MPI_Finalize", C.MPI_Finalize()) }
