package nanogpt

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/nlpodyssey/gopickle/types"

	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
)

// torch.save (PyTorch ≥ 1.6) writes a zip archive, every entry under one
// folder named after the file: PREFIX/data.pkl is the pickle of the saved
// object, and each tensor storage is the raw little-endian array in
// PREFIX/data/KEY, where KEY is named by the pickle's persistent ids.

const (
	// maxPickleSize bounds data.pkl. A checkpoint's pickle holds only
	// names, shapes and small settings (a 64-block model's is well under
	// a megabyte); the numbers are in the other entries.
	maxPickleSize = 64 << 20
	// maxElements bounds one tensor, as modelfile's reader does by file size.
	maxElements = 1 << 31
	// maxExpansion bounds what the archive may unpack to, all the entries
	// read together, as a multiple of its size. torch.save stores its
	// entries uncompressed (a ratio of 1); a checkpoint re-zipped with
	// deflate still has numbers that barely compress; a zip bomb (2 GiB of
	// zeros in 2 MB) has a ratio of 1000.
	maxExpansion = 8
)

// storageTypes are the storage classes a checkpoint may name, with the
// size of one element in bytes.
var storageTypes = map[string]int{
	"torch.FloatStorage": 4, "torch.DoubleStorage": 8, "torch.HalfStorage": 2,
	"torch.BFloat16Storage": 2, "torch.LongStorage": 8, "torch.IntStorage": 4,
	"torch.ShortStorage": 2, "torch.CharStorage": 1, "torch.ByteStorage": 1,
	"torch.BoolStorage": 1,
}

// storageType is what FindClass returns for one of storageTypes.
type storageType struct {
	name string
	size int
}

// storage is one persistent storage: an entry of the zip, not yet read.
type storage struct {
	typ   storageType
	key   string
	numel int
}

// tensorRef is a tensor as the pickle describes it: a view into a storage.
type tensorRef struct {
	storage *storage
	offset  int
	shape   []int
}

// numel is the number of elements of the tensor.
func (t *tensorRef) numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// rebuildTensor stands for torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, backward_hooks[, metadata]).
// It records the view after checking it lies inside the storage and is
// contiguous (state_dict tensors always are).
type rebuildTensor struct{}

func (rebuildTensor) Call(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments", len(args))
	}
	st, ok := args[0].(*storage)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2 without a storage")
	}
	offset, ok1 := intOf(args[1])
	size, ok2 := tupleOf(args[2])
	stride, ok3 := tupleOf(args[3])
	if !ok1 || !ok2 || !ok3 || len(size) != len(stride) || offset < 0 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with malformed offset, size or stride")
	}
	t := &tensorRef{storage: st, offset: offset, shape: make([]int, len(size))}
	n := 1
	for i := range size {
		d, ok := intOf(size[i])
		if !ok || d < 0 {
			return nil, fmt.Errorf("tensor size %v is not a list of non-negative integers", size)
		}
		if d != 0 && n > maxElements/d {
			return nil, fmt.Errorf("tensor of size %v is too large", size)
		}
		t.shape[i], n = d, n*d
	}
	want := 1
	for i := len(stride) - 1; i >= 0; i-- {
		s, ok := intOf(stride[i])
		if !ok || (s != want && t.shape[i] > 1) {
			return nil, fmt.Errorf("tensor of size %v has strides %v; only contiguous tensors are read", size, stride)
		}
		want *= t.shape[i]
	}
	if offset > st.numel || n > st.numel-offset {
		return nil, fmt.Errorf("tensor of size %v at offset %d overruns its storage of %d elements", size, offset, st.numel)
	}
	return t, nil
}

// checkpointClasses are the only globals a checkpoint's pickle may name.
func checkpointClasses() map[string]any {
	c := map[string]any{
		"collections.OrderedDict":         &types.OrderedDictClass{},
		"torch._utils._rebuild_tensor_v2": rebuildTensor{},
	}
	for name, size := range storageTypes {
		c[name] = storageType{name, size}
	}
	return c
}

// checkpoint is an opened torch.save archive.
type checkpoint struct {
	path   string
	file   *os.File
	zip    *zip.Reader
	prefix string // the archive's folder, with its trailing slash
	root   any    // the unpickled object
	// budget is how many more bytes may be read from the archive and
	// viewed as tensors (maxExpansion times its size in all).
	budget int64
	// last is the storage read last, kept because c_attn's q, k and v
	// (and their biases) are three cuts of one storage read in a row.
	lastKey string
	lastRaw []byte
	entries map[string]*zip.File // by name
}

func (c *checkpoint) Close() error {
	if c.file == nil {
		return nil
	}
	return c.file.Close()
}

// openCheckpoint opens a torch.save archive and unpickles its data.pkl
// safely; tensor data is read later, by readFloats.
func openCheckpoint(path string) (*checkpoint, error) {
	// A regular file only: a FIFO would block, /dev/zero read forever.
	f, size, err := inputfile.Open(path, 0)
	if err != nil {
		var ie *inputfile.Error
		if errors.As(err, &ie) {
			return nil, fmt.Errorf("%s: %s", quote.Name(path), ie.Problem)
		}
		return nil, err
	}
	c, err := readCheckpoint(path, f, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.file = f
	return c, nil
}

// readCheckpoint is openCheckpoint of an archive of size bytes read from r;
// path names it in messages.
func readCheckpoint(path string, r io.ReaderAt, size int64) (*checkpoint, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: not a PyTorch checkpoint (a zip archive written by torch.save): %v", quote.Name(path), err)
	}
	c := &checkpoint{path: path, zip: z, budget: maxExpansion * size}
	fail := func(format string, args ...any) (*checkpoint, error) {
		return nil, fmt.Errorf("%s: "+format, append([]any{quote.Name(path)}, args...)...)
	}
	var pkl *zip.File
	c.entries = make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		if c.entries[f.Name] != nil { // which of the two a reader takes is anyone's guess
			return fail("holds the entry %s twice: a checkpoint names each once", quote.Name(f.Name))
		}
		c.entries[f.Name] = f
		if dir, ok := strings.CutSuffix(f.Name, "data.pkl"); ok && strings.Count(dir, "/") == 1 && strings.HasSuffix(dir, "/") {
			if pkl != nil {
				return fail("holds two data.pkl entries")
			}
			pkl, c.prefix = f, dir
		}
	}
	if pkl == nil {
		return fail("no data.pkl in the archive: not a torch.save checkpoint")
	}
	data, err := c.readEntry(pkl, maxPickleSize)
	if err != nil {
		return fail("%s: %v", pkl.Name, err)
	}
	storages := map[string]*storage{}
	persistent := func(id any) (any, error) {
		t, ok := tupleOf(id)
		if !ok || len(t) != 5 || t[0] != "storage" {
			return nil, fmt.Errorf("persistent id %v is not a storage", id)
		}
		typ, ok1 := t[1].(storageType)
		key, ok2 := t[2].(string)
		numel, ok3 := intOf(t[4])
		if !ok1 || !ok2 || !ok3 || numel < 0 || numel > maxElements {
			return nil, fmt.Errorf("malformed storage reference %v", id)
		}
		if s, seen := storages[key]; seen {
			if s.typ != typ || s.numel != numel {
				return nil, fmt.Errorf("storage %q is described twice, differently", key)
			}
			return s, nil
		}
		s := &storage{typ: typ, key: key, numel: numel}
		storages[key] = s
		return s, nil
	}
	if c.root, err = unpickle(data, checkpointClasses(), persistent); err != nil {
		return fail("%s: %v", pkl.Name, err)
	}
	return c, nil
}

// readEntry reads a whole stored or deflated zip entry of at most limit
// bytes, and within what is left of the archive's budget (maxExpansion
// times its size over all the entries read), so that neither an entry's
// declared size nor a zip bomb's real one can make it allocate more.
func (c *checkpoint) readEntry(f *zip.File, limit int64) ([]byte, error) {
	size := f.UncompressedSize64
	if size > uint64(limit) {
		return nil, fmt.Errorf("entry of %d bytes is larger than the %d allowed", size, limit)
	}
	if size > uint64(c.budget) {
		return nil, fmt.Errorf("entry of %d bytes would unpack the archive past %d times its size (a zip bomb?)", size, maxExpansion)
	}
	if f.Method == zip.Store && size > f.CompressedSize64 {
		return nil, fmt.Errorf("entry of %d bytes is stored in %d (truncated?)", size, f.CompressedSize64)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c.budget -= int64(size)
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %v (truncated archive?)", size, err)
	}
	// The zip reader checks the entry's CRC only when it reaches the end:
	// one more read gets there, so that damaged numbers are not imported.
	var one [1]byte
	if n, err := r.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("entry holds more than the %d bytes it declares", size)
	} else if err != io.EOF {
		return nil, fmt.Errorf("%v: the entry's %d bytes are damaged", err, size)
	}
	return buf, nil
}

// readFloats reads the numbers of a floating-point tensor as float64, and
// says whether they were double precision.
func (c *checkpoint) readFloats(t *tensorRef) ([]float64, bool, error) {
	st := t.storage
	name := c.prefix + "data/" + st.key
	entry := c.entries[name]
	if entry == nil {
		return nil, false, fmt.Errorf("storage %s is missing from the archive", name)
	}
	want := int64(st.numel) * int64(st.typ.size)
	if int64(entry.UncompressedSize64) != want {
		return nil, false, fmt.Errorf("storage %s holds %d bytes, its %d %s elements need %d",
			name, entry.UncompressedSize64, st.numel, st.typ.name, want)
	}
	raw := c.lastRaw
	if c.lastKey != st.key || raw == nil {
		c.lastKey, c.lastRaw = "", nil // let the collector have the old one first
		var err error
		if raw, err = c.readEntry(entry, want); err != nil {
			return nil, false, fmt.Errorf("storage %s: %v", name, err)
		}
		c.lastKey, c.lastRaw = st.key, raw
	}
	n, size := t.numel(), st.typ.size
	// The views count against the budget too: many tensors that are views
	// of one storage (read once) must not multiply it in memory.
	if int64(n*size) > c.budget {
		return nil, false, fmt.Errorf("the tensors read so far describe more than %d times the archive's size (views of one storage, over and over?)", maxExpansion)
	}
	c.budget -= int64(n * size)
	raw = raw[t.offset*size : (t.offset+n)*size]
	out := make([]float64, n)
	switch st.typ.name {
	case "torch.FloatStorage":
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	case "torch.DoubleStorage":
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case "torch.BFloat16Storage":
		for i := range out {
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16))
		}
	case "torch.HalfStorage":
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	default:
		return nil, false, fmt.Errorf("storage %s holds %s, not floating-point numbers", name, st.typ.name)
	}
	return out, st.typ.name == "torch.DoubleStorage", nil
}

// halfToFloat converts an IEEE 754 binary16 value.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * frac * math.Pow(2, -24)
	case 0x1f:
		if frac == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
}
