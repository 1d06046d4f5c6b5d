package train

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"
	"unsafe"

	"github.com/gptg/gptg/config"
)

// Comm is what a distributed run needs of the job's processes; package
// internal/mpi's Comm is one (Open MPI, under mpirun or srun).
type Comm interface {
	Rank() int
	Size() int
	Send(buf []byte, to int) error
	Recv(buf []byte, from int) error
	Bcast(buf []byte, root int) error
	Gather(send, recv []byte, root int) error
	Barrier() error
}

// A distributed step splits the step's train.grad_accum batches — its
// shards — over the ranks, rank r taking the r-th run of accum/ranks of
// them, and sums their gradients in their own dtype in shard order, as
// one process does (foldShard, which both call; the messages carry the
// sums in their dtype): rank 0 adds its shards and sends the
// partial sums to rank 1, which adds its own and passes them on, in chunks
// so that the ranks' links work side by side (a pipeline along the rank
// chain); the last rank divides by accum and broadcasts the mean. The
// additions are one process's, in its order, so N ranks give the weights
// of one process bit for bit; an MPI allreduce would be faster on many
// ranks but adds in an order of the library's choosing. Within a rank a
// shard runs as one process runs it (its graph shards, its threads).

// chainChunk is the bytes per message of the rank chain: 4 MiB, large
// enough that a message's latency is small beside its transfer, small
// enough that the last rank starts adding soon after the first rank's
// first chunk.
const chainChunk = 4 << 20

// CheckRanks refuses a rank count that does not divide the config's
// shards: the shards of a step are the config's (train.grad_accum), never
// the job's, so that any rank count gives the same weights.
func CheckRanks(accum, ranks int) error {
	accum = max(1, accum)
	if accum%ranks != 0 {
		return fmt.Errorf("--distributed on %d ranks: train.grad_accum = %d (the batches of a step, which the ranks share) is not a multiple of %d; run on a rank count that divides %d, or set train.grad_accum to a multiple of %d (and train.batch to keep the step's size)",
			ranks, accum, ranks, accum, ranks)
	}
	return nil
}

// chain holds a rank's shard gradients for one step, flattened, and the
// sums that travel along the rank chain.
type chain[F float32 | float64] struct {
	shards [][]F // this rank's shards' gradients, flat
	sums   []F   // the running sums, chunk by chunk
	mean   []F   // the step's mean gradient, broadcast from the last rank
}

// gradsAcross runs this rank's shards of the step and leaves the mean
// gradient of all ranks' shards in the program's gradient tensors, and
// returns the mean loss, both as Step computes them in one process.
func (s *Stepper) gradsAcross(step int, tokens, targets []int) (float64, error) {
	switch s.Prog.Params[0].Value().Data().(type) { // the gradients have no value before the first run
	case []float32:
		if s.chain32 == nil {
			s.chain32 = &chain[float32]{}
		}
		return gradsAcross(s, s.chain32, step, tokens, targets)
	default:
		if s.chain64 == nil {
			s.chain64 = &chain[float64]{}
		}
		return gradsAcross(s, s.chain64, step, tokens, targets)
	}
}

func gradsAcross[F float32 | float64](s *Stepper, c *chain[F], step int, tokens, targets []int) (float64, error) {
	accum := max(1, s.Accum)
	ranks, rank := s.Comm.Size(), s.Comm.Rank()
	if err := CheckRanks(accum, ranks); err != nil {
		return 0, err
	}
	per := accum / ranks
	n := len(tokens) / accum
	total := 0
	for _, p := range s.Prog.Params { // each gradient has its parameter's shape
		total += p.Value().Shape().TotalSize()
	}
	if c.shards == nil {
		*c = *newChain[F](per, total)
	}
	losses := make([]float64, per)
	for j := range per {
		k := rank*per + j
		s.Prog.SetDropout(s.Seed, uint64(step*accum+k))
		if err := s.Prog.Run(tokens[k*n:(k+1)*n], targets[k*n:(k+1)*n]); err != nil {
			return 0, err
		}
		losses[j] = s.Prog.Loss()
		off := 0
		for _, g := range s.Prog.Grads {
			off += copy(c.shards[j][off:], g.Value().Data().([]F))
		}
	}
	s.waitingSince.Store(time.Now().UnixNano())
	defer s.waitingSince.Store(0)
	loss, stop, err := c.exchange(s.Comm, accum, losses, s.Stop != nil && s.Stop())
	if err != nil {
		return 0, err
	}
	off := 0
	for _, g := range s.Prog.Grads {
		off += copy(g.Value().Data().([]F), c.mean[off:])
	}
	s.stopAgreed = stop
	return loss, nil
}

// newChain makes the buffers of per shards of total gradients.
func newChain[F float32 | float64](per, total int) *chain[F] {
	c := &chain[F]{shards: make([][]F, per), sums: make([]F, min(total, chainChunk/int(unsafe.Sizeof(F(0))))), mean: make([]F, total)}
	for j := range c.shards {
		c.shards[j] = make([]F, total)
	}
	return c
}

// exchange sums the shards of every rank (c.shards, losses: this rank's)
// in shard order along the rank chain and leaves their mean in c.mean on
// every rank; it returns the mean loss and whether any rank asked to stop.
func (c *chain[F]) exchange(comm Comm, accum int, losses []float64, stop bool) (float64, bool, error) {
	ranks, rank := comm.Size(), comm.Rank()
	total := len(c.mean)
	// The loss: Step's r.Loss += loss/accum, shard by shard, along the
	// chain; beside it whether any rank was asked to stop (stopAgreed).
	loss := []float64{0, 0}
	if rank > 0 {
		if err := comm.Recv(asBytes(loss), rank-1); err != nil {
			return 0, false, err
		}
	}
	for _, l := range losses {
		loss[0] += l / float64(accum)
	}
	if stop {
		loss[1] = 1
	}
	if rank < ranks-1 {
		if err := comm.Send(asBytes(loss), rank+1); err != nil {
			return 0, false, err
		}
	}
	// The gradients: foldShard's sums, chunk by chunk along the chain; the
	// last rank's last shard leaves the mean in c.mean.
	chunk := len(c.sums)
	for lo := 0; lo < total; lo += chunk {
		hi := min(total, lo+chunk)
		part := c.sums[:hi-lo]
		if rank > 0 {
			if err := comm.Recv(asBytes(part), rank-1); err != nil {
				return 0, false, err
			}
		}
		for j, sh := range c.shards {
			foldShard(part, sh[lo:hi], c.mean[lo:hi], rank*len(c.shards)+j, accum)
		}
		if rank < ranks-1 {
			if err := comm.Send(asBytes(part), rank+1); err != nil {
				return 0, false, err
			}
		}
	}
	last := ranks - 1
	lossBytes := make([]byte, 16)
	binary.LittleEndian.PutUint64(lossBytes, math.Float64bits(loss[0]))
	binary.LittleEndian.PutUint64(lossBytes[8:], math.Float64bits(loss[1]))
	if err := comm.Bcast(lossBytes, last); err != nil {
		return 0, false, err
	}
	if err := comm.Bcast(asBytes(c.mean), last); err != nil {
		return 0, false, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(lossBytes)),
		math.Float64frombits(binary.LittleEndian.Uint64(lossBytes[8:])) != 0, nil
}

// ExchangeSeconds times the exchange of a distributed step — the chain of
// sums and the broadcast, no compute — for float32 gradients of params
// values with accum shards per step: the seconds of each of reps
// exchanges, on every rank (bench/mpistep measures it).
func ExchangeSeconds(comm Comm, params, accum, reps int) ([]float64, error) {
	if err := CheckRanks(accum, comm.Size()); err != nil {
		return nil, err
	}
	per := max(1, accum) / comm.Size()
	c := newChain[float32](per, params)
	for j := range c.shards {
		for i := range c.shards[j] {
			c.shards[j][i] = float32(i%1000) * 1e-3
		}
	}
	secs := make([]float64, reps)
	losses := make([]float64, per)
	for r := range secs {
		start := time.Now()
		if _, _, err := c.exchange(comm, accum, losses, false); err != nil {
			return nil, err
		}
		secs[r] = time.Since(start).Seconds()
	}
	return secs, nil
}

// asBytes is the memory of xs as bytes, for a broadcast.
func asBytes[F float32 | float64](xs []F) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(xs[0])))
}

// follower says this process is a rank other than 0 of a distributed run:
// it trains like rank 0 but writes nothing (no run folder, metrics or
// checkpoint) and skips the evaluations, whose losses only rank 0 records.
func (t *trainer) follower() bool { return t.opts.Comm != nil && t.opts.Comm.Rank() != 0 }

// JobMismatchError is a distributed job whose ranks do not run the same
// binary on the same config, corpus and starting weights: refused before
// any step, since their steps would not add up to one run.
type JobMismatchError struct{ Msg string }

func (e *JobMismatchError) Error() string { return e.Msg }

// agree checks, before the first step, that every rank runs the same
// gptg binary on the same config and corpus from the same weights and
// step: each rank sends rank 0 the SHA-256 of each, rank 0 compares them
// with its own and broadcasts which rank differs, and in what.
func (t *trainer) agree() error {
	c := t.opts.Comm
	if c == nil || c.Size() == 1 {
		return nil
	}
	if err := CheckRanks(t.cfg.Train.GradAccum, c.Size()); err != nil {
		return &JobMismatchError{err.Error()}
	}
	mine := t.jobDigests()
	var all []byte
	if c.Rank() == 0 {
		all = make([]byte, c.Size()*len(mine))
	}
	if err := c.Gather(mine, all, 0); err != nil {
		return err
	}
	verdict := make([]byte, 256)
	if c.Rank() == 0 {
		copy(verdict, compareDigests(all, len(mine)))
	}
	if err := c.Bcast(verdict, 0); err != nil {
		return err
	}
	if verdict[0] != 0 {
		msg := string(verdict[:clen(verdict)])
		return &JobMismatchError{msg}
	}
	fmt.Fprintf(t.opts.Log, "distributed over %d ranks: %d of the step's %d batches each, gradients summed along the rank chain\n",
		c.Size(), max(1, t.cfg.Train.GradAccum)/c.Size(), max(1, t.cfg.Train.GradAccum))
	return nil
}

func clen(b []byte) int {
	for i, v := range b {
		if v == 0 {
			return i
		}
	}
	return len(b)
}

// digestNames name jobDigests' parts, in order.
var digestNames = []string{"gptg binary", "config", "corpus", "weights, optimizer state or step"}

// jobDigests is the SHA-256 of the running binary, the resolved config
// (train.out and the machine's settings aside: only rank 0 writes, and
// threads may differ per node), the corpus and the training state.
func (t *trainer) jobDigests() []byte {
	var out []byte
	h := sha256.New()
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			io.Copy(h, f)
			f.Close()
		}
	}
	out = h.Sum(out)
	cfg := *t.cfg
	cfg.Train.Out, cfg.Train.Threads, cfg.Path = "", 0, ""
	cj, _ := json.Marshal(struct{ Model, Train any }{cfg.Model, cfg.Train})
	out = append(out, digest(cj)...)
	out = append(out, digest([]byte(t.data.SHA256+"/"+t.data.ValSHA256))...)
	h = sha256.New()
	fmt.Fprintf(h, "step %d adam %d\n", t.step, t.opt.Steps)
	for _, p := range t.prog.Params {
		switch d := p.Value().Data().(type) {
		case []float32:
			h.Write(asBytes(d))
		case []float64:
			h.Write(asBytes(d))
		}
	}
	return h.Sum(out)
}

func digest(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// compareDigests is rank 0's verdict on every rank's digests (each size
// bytes): "" when all match rank 0's, else the first difference.
func compareDigests(all []byte, size int) string {
	ref := all[:size]
	for r := 1; r*size < len(all); r++ {
		d := all[r*size : (r+1)*size]
		for i, name := range digestNames {
			if string(d[i*32:(i+1)*32]) != string(ref[i*32:(i+1)*32]) {
				return fmt.Sprintf("--distributed: rank %d's %s differs from rank 0's: every rank must run the same gptg on the same config, corpus and run folder; nothing was trained", r, name)
			}
		}
	}
	return ""
}

// follower says opts run a rank other than 0 of a distributed job.
func follower(opts Options) bool { return opts.Comm != nil && opts.Comm.Rank() != 0 }

// distributedModel refuses, before anything is written, a distributed run
// it cannot give one process's weights: a rank count that does not divide
// the step's batches, or an encoder–decoder (its steps are not split
// across ranks).
func distributedModel(cfg *config.Config, opts Options) error {
	if opts.Comm == nil || opts.Comm.Size() == 1 {
		return nil
	}
	if cfg.Model.EncoderDecoder() {
		return &config.Error{File: cfg.Path, Key: "model", Msg: "--distributed trains GPT models only; train the encoder–decoder in one process"}
	}
	if err := CheckRanks(cfg.Train.GradAccum, opts.Comm.Size()); err != nil {
		return &config.Error{File: cfg.Path, Key: "train.grad_accum", Msg: err.Error()}
	}
	return nil
}

// runFollower is Run on a rank other than 0: the same trainer, the same
// starting weights (--init, or the seed's), the same steps, no files.
func runFollower(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	t, err := startTrainer(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	defer t.close()
	return t.loop(ctx)
}

// A distributed run stops (Ctrl-C, SIGTERM, SIGHUP, which mpirun and srun
// pass to every rank) only where every rank stops: after the step in
// which any rank saw the signal, so that rank 0 saves the weights every
// rank has. A rank that stopped on its own would leave the others waiting
// on it mid-step.
func (t *trainer) stopNow(ctx context.Context) bool {
	c := t.opts.Comm
	if c == nil || c.Size() == 1 {
		return ctx.Err() != nil
	}
	// Rank 0 stopped in an evaluation (t.pending), which only it runs: it
	// saves and ends, and mpirun ends the ranks waiting for its next step.
	return t.stepper.stopAgreed || (t.pending != nil && ctx.Err() != nil)
}

// distributedFlag is what a resume command of this run adds: a
// distributed run resumes on any rank count that divides grad_accum.
func (t *trainer) distributedFlag() string {
	if c := t.opts.Comm; c != nil && c.Size() > 1 {
		return " --distributed (under mpirun or srun)"
	}
	return ""
}

// waitForSave holds the ranks of a distributed run that agreed to stop
// until rank 0 has saved: mpirun ends the whole job as soon as one rank
// exits with an error (130 is one), which would kill rank 0 mid-save. A
// stop rank 0 took alone (in an evaluation) has the others waiting in the
// next step instead; rank 0 has saved when mpirun ends them.
func (t *trainer) waitForSave() {
	if c := t.opts.Comm; c != nil && c.Size() > 1 && t.stepper.stopAgreed {
		c.Barrier()
	}
}

// watchRanks prints rank 0's line when the job is stopped while rank 0
// waits on the other ranks: mpirun, seeing a rank die, sends the others
// SIGTERM and SIGKILL a second later (Open MPI's odls_base_sigkill_timeout),
// and a rank blocked in MPI would end without a word. A stop that finds
// rank 0 computing is an ordinary interrupt: the ranks agree on it after
// the step, and rank 0 saves.
func (t *trainer) watchRanks(ctx context.Context) {
	c := t.opts.Comm
	if c == nil || c.Size() == 1 || c.Rank() != 0 || t.opts.RanksLost == nil {
		return
	}
	s := t.stepper
	go func() {
		<-ctx.Done()
		stopped := time.Now()
		for {
			if since := s.waitingSince.Load(); since != 0 {
				from := max(since, stopped.UnixNano())
				if time.Since(time.Unix(0, from)) > rankLossWait {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		where := "no checkpoint was written"
		if step, _, err := Progress(t.dir); err == nil {
			where = fmt.Sprintf("the last checkpoint is step %d: continue with gptg train --resume %s --distributed, under mpirun or srun", step, t.dir)
		}
		t.opts.RanksLost(fmt.Sprintf("rank 0: the job was stopped while rank 0 waited for the other ranks' gradients (a rank died, or the job was cancelled); %s", where))
	}()
}

// rankLossWait is how long rank 0, asked to stop, waits in a step's
// exchange before it concludes that the other ranks are gone: well under
// the second mpirun gives before SIGKILL. An interrupt that finds the
// ranks that far apart ends without the save, and --resume goes on from
// the last checkpoint.
const rankLossWait = 300 * time.Millisecond
