//go:build !mpi

package mpi

// Built reports whether this binary can run over MPI.
const Built = false

// Comm is the job's processes (MPI_COMM_WORLD); a build without MPI has none.
type Comm struct{}

// Init refuses: this build has no MPI.
func Init() (*Comm, error) { return nil, ErrNotBuilt }

// The methods of a build without MPI: one process, no messages.

func (c *Comm) Rank() int                                { return 0 }
func (c *Comm) Size() int                                { return 1 }
func (c *Comm) Send(buf []byte, to int) error            { return ErrNotBuilt }
func (c *Comm) Recv(buf []byte, from int) error          { return ErrNotBuilt }
func (c *Comm) Bcast(buf []byte, root int) error         { return ErrNotBuilt }
func (c *Comm) Gather(send, recv []byte, root int) error { return ErrNotBuilt }
func (c *Comm) Barrier() error                           { return ErrNotBuilt }
func (c *Comm) Abort(code int)                           {}
func (c *Comm) Finalize() error                          { return nil }
