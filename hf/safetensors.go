package hf

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/gptg/gptg/internal/inputfile"
	"github.com/gptg/gptg/internal/quote"
	"github.com/gptg/gptg/modelfile"
)

// stFile is a safetensors file as Hugging Face writes it (the safetensors
// library's save_file): 8 bytes of little-endian header length N, N bytes
// of JSON header naming each tensor's dtype, shape and byte range, then
// the data. gptg's own model files hold F32 and F64 only (package
// modelfile); a checkpoint may hold F16 and BF16 weights too, and boolean
// or byte masks, so it gets this reader of its own, which checks the
// header as modelfile does and reads one tensor at a time.
type stFile struct {
	path    string
	f       *os.File
	data    int64 // offset of the data region in the file
	tensors map[string]stTensor
	order   []string // tensor names in header order, for messages
}

// stTensor is one tensor of the header.
type stTensor struct {
	name       string
	dtype      string
	shape      []int
	begin, end int64 // byte range within the data region
}

// elemSize is the size in bytes of each dtype a GPT-2 checkpoint may hold.
var elemSize = map[string]int64{"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "BOOL": 1, "U8": 1}

// maxHeader is the safetensors library's limit on a header.
const maxHeader = 100_000_000

// openST opens a safetensors file and checks its header: valid UTF-8 JSON
// without repeated keys, entries with a known dtype, a shape and a byte
// range that matches them, the ranges inside the file, not overlapping
// and covering the data without gaps. Every error names the file, and the
// tensor when one is at fault.
func openST(path string) (*stFile, error) {
	f, size, err := inputfile.Open(path, 0)
	if err != nil {
		return nil, err
	}
	st, err := readHeader(path, f, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	return st, nil
}

func (st *stFile) Close() error { return st.f.Close() }

func readHeader(path string, f *os.File, size int64) (*stFile, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: "+format, append([]any{quote.Name(path)}, args...)...)
	}
	if size < 8 {
		return nil, fail("file is %d bytes, too short for a safetensors file (its 8-byte header length)", size)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, fail("reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case n < 2:
		return nil, fail("not a safetensors file: header length %d is too small", n)
	case n > uint64(size-8):
		return nil, fail("not a safetensors file, or truncated: header length %d exceeds the %d bytes that follow it", n, size-8)
	case n > maxHeader:
		return nil, fail("header length %d exceeds the safetensors limit of %d bytes", n, maxHeader)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, fail("reading the header: %v", err)
	}
	st := &stFile{path: path, f: f, data: 8 + int64(n), tensors: map[string]stTensor{}}
	if err := st.parse(header); err != nil {
		return nil, fail("%v", err)
	}
	if err := st.checkLayout(size - st.data); err != nil {
		return nil, fail("%v", err)
	}
	return st, nil
}

// parse decodes the header's entries in order.
func (st *stFile) parse(header []byte) error {
	// Safetensors pads the header with spaces to a multiple of 8 bytes.
	header = bytes.TrimRight(header, " ")
	if err := modelfile.CheckSurrogates(header); err != nil {
		return fmt.Errorf("header: %v", err)
	}
	if !json.Valid(header) {
		return errors.New("header is not valid JSON: not a safetensors file, or a damaged one")
	}
	if err := modelfile.UniqueKeys(header); err != nil {
		return fmt.Errorf("header: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("header is not a JSON object: not a safetensors file")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("header: %v", err)
		}
		name := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("header: %v", err)
		}
		if name == "__metadata__" {
			continue // free text (format: "pt"); nothing in it changes the weights
		}
		if len(st.order) == modelfile.DefaultMaxTensors {
			return fmt.Errorf("header lists more than %d tensors", modelfile.DefaultMaxTensors)
		}
		t, err := parseTensor(name, raw)
		if err != nil {
			return fmt.Errorf("tensor %s: %v", quote.Value(name), err)
		}
		st.tensors[name] = t
		st.order = append(st.order, name)
	}
	return nil
}

func parseTensor(name string, raw json.RawMessage) (stTensor, error) {
	t := stTensor{name: name}
	var e struct {
		Dtype   *string  `json:"dtype"`
		Shape   *[]int64 `json:"shape"`
		Offsets *[]int64 `json:"data_offsets"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return t, fmt.Errorf("entry is not {dtype, shape, data_offsets}: %v", err)
	}
	if e.Dtype == nil || e.Shape == nil || e.Offsets == nil {
		return t, errors.New("entry lacks dtype, shape or data_offsets")
	}
	t.dtype = *e.Dtype
	size, ok := elemSize[t.dtype]
	if !ok {
		return t, fmt.Errorf("dtype %s is not supported (gptg reads F32, F16, BF16 and F64 weights)", quote.Value(t.dtype))
	}
	count := int64(1)
	for i, d := range *e.Shape {
		if d < 0 {
			return t, fmt.Errorf("shape[%d] is negative", i)
		}
		if d > 0 && count > math.MaxInt64/8/d {
			return t, fmt.Errorf("shape %v is too large", *e.Shape)
		}
		count *= d
		t.shape = append(t.shape, int(d))
	}
	if t.shape == nil {
		t.shape = []int{}
	}
	if len(*e.Offsets) != 2 {
		return t, fmt.Errorf("data_offsets has %d numbers, want 2", len(*e.Offsets))
	}
	t.begin, t.end = (*e.Offsets)[0], (*e.Offsets)[1]
	if t.begin < 0 || t.end < t.begin {
		return t, fmt.Errorf("data_offsets [%d, %d] are not a byte range", t.begin, t.end)
	}
	if t.end-t.begin != count*size {
		return t, fmt.Errorf("data_offsets [%d, %d] span %d bytes, but %s %v needs %d",
			t.begin, t.end, t.end-t.begin, t.dtype, t.shape, count*size)
	}
	return t, nil
}

// checkLayout checks that the tensors lie inside the data region and
// tile it, as the safetensors library requires: a tensor past the end is
// a truncated file, two sharing bytes a header that lies.
func (st *stFile) checkLayout(dataSize int64) error {
	ts := make([]stTensor, 0, len(st.order))
	for _, name := range st.order {
		t := st.tensors[name]
		if t.end > dataSize {
			return fmt.Errorf("tensor %s ends at byte %d of the data, which has %d bytes: the file is truncated or its header is wrong",
				quote.Value(name), t.end, dataSize)
		}
		ts = append(ts, t)
	}
	slices.SortStableFunc(ts, func(a, b stTensor) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end))
	})
	var pos int64
	for i, t := range ts {
		if t.begin < pos {
			return fmt.Errorf("tensors %s and %s overlap (bytes %d to %d and %d to %d): the header is wrong",
				quote.Value(ts[i-1].name), quote.Value(t.name), ts[i-1].begin, ts[i-1].end, t.begin, t.end)
		}
		if t.begin > pos {
			return fmt.Errorf("data bytes %d to %d belong to no tensor (a gap before %s): the header is wrong", pos, t.begin, quote.Value(t.name))
		}
		pos = t.end
	}
	if pos < dataSize {
		return fmt.Errorf("data bytes %d to %d belong to no tensor (after the last one): the header is wrong", pos, dataSize)
	}
	return nil
}

// float32s reads tensor t as float32s: F32 as it is, F16 and BF16
// widened exactly, F64 narrowed (refused beyond float32's range). A value
// that is not finite is refused with the tensor's name and the entry.
func (st *stFile) float32s(t stTensor) ([]float32, error) {
	return st.float32sInto(nil, t)
}

// float32sInto is float32s into buf when it is large enough (a buffer
// reused for weights that are transposed into another at once).
func (st *stFile) float32sInto(buf []float32, t stTensor) ([]float32, error) {
	n := int((t.end - t.begin) / elemSize[t.dtype])
	if cap(buf) < n {
		buf = make([]float32, n)
	}
	out := buf[:n]
	err := st.each(t, func(i int, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			return fmt.Errorf("%s: tensor %s holds %v at entry %d", quote.Name(st.path), quote.Value(t.name), v, i)
		}
		out[i] = float32(v)
		return nil
	})
	return out, err
}

// each calls f with every value of t, in order, as float64 (exact for
// every dtype read), reading the file a megabyte at a time.
func (st *stFile) each(t stTensor, f func(i int, v float64) error) error {
	size := elemSize[t.dtype]
	r := io.NewSectionReader(st.f, st.data+t.begin, t.end-t.begin)
	buf := make([]byte, min(1<<20, t.end-t.begin))
	i := 0
	for left := t.end - t.begin; left > 0; {
		b := buf[:min(int64(len(buf)), left)]
		if _, err := io.ReadFull(r, b); err != nil {
			return fmt.Errorf("%s: reading tensor %s: %v (the file changed while read)", quote.Name(st.path), quote.Value(t.name), err)
		}
		left -= int64(len(b))
		for at := 0; at < len(b); at += int(size) {
			if err := f(i, decode(t.dtype, b[at:])); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// decode is one little-endian value of dtype as float64.
func decode(dtype string, b []byte) float64 {
	switch dtype {
	case "F64":
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case "F32":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case "F16":
		return float64(halfToFloat32(binary.LittleEndian.Uint16(b)))
	case "BF16":
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	}
	return float64(b[0]) // BOOL, U8
}

// halfToFloat32 widens an IEEE 754 half-precision number exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: mant · 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
