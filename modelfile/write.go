package modelfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/gptg/gptg/internal/atomicfile"
)

// Write saves tensors, in the order given, and meta as a safetensors file.
// It goes through a temporary file renamed over path (internal/atomicfile),
// so a crash or a full disk leaves the old file or the new one, never a
// torn mix, and no temporary file behind. A link at path is written
// through (atomicfile.Write): path is a name the user gave.
func Write(path string, tensors []Tensor, meta map[string]string) error {
	return write(atomicfile.Write, path, tensors, meta, false)
}

// WriteOwn is Write for a model file a command names itself inside a
// folder it writes (a run's model.safetensors and checkpoint.safetensors)
// or has already resolved (import --out): whatever is at path — a link, a
// FIFO — is replaced by the new file, never followed (atomicfile.WriteOwn),
// so a link planted there cannot lead the write over the file it names.
func WriteOwn(path string, tensors []Tensor, meta map[string]string) error {
	return write(atomicfile.WriteOwn, path, tensors, meta, false)
}

// WriteBF16 is Write with every tensor stored as BF16: each float32
// rounded to the nearest bfloat16, ties to even (bf16Bits), as PyTorch's
// .to(torch.bfloat16) rounds. The file is half the size; Read gives the
// rounded values back as float32. Every tensor must be float32.
func WriteBF16(path string, tensors []Tensor, meta map[string]string) error {
	return write(atomicfile.Write, path, tensors, meta, true)
}

// WriteToBF16 writes the file WriteBF16 would write to w.
func WriteToBF16(w io.Writer, tensors []Tensor, meta map[string]string) error {
	header, _, err := encodeHeader(tensors, meta, true)
	if err != nil {
		return err
	}
	return encode(w, header, tensors, true)
}

func write(to func(string, func(io.Writer) error) error, path string, tensors []Tensor, meta map[string]string, bf16 bool) error {
	header, _, err := encodeHeader(tensors, meta, bf16)
	if err != nil {
		return fail(path, "%w", err)
	}
	err = to(path, func(w io.Writer) error { return encode(w, header, tensors, bf16) })
	var refused *atomicfile.Error
	switch {
	case errors.As(err, &refused): // names path already
		return err
	case err != nil:
		return pathError(path, err)
	}
	return nil
}

// WriteTo writes the safetensors file Write would write to w (standard
// output, for gptg import --out -).
func WriteTo(w io.Writer, tensors []Tensor, meta map[string]string) error {
	header, _, err := encodeHeader(tensors, meta, false)
	if err != nil {
		return err
	}
	return encode(w, header, tensors, false)
}

// encode writes the header's length, the header and the tensors' data
// (rounded to bfloat16 when bf16 is set).
func encode(w io.Writer, header []byte, tensors []Tensor, bf16 bool) error {
	if err := binary.Write(w, binary.LittleEndian, uint64(len(header))); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for _, t := range tensors {
		write := writeData
		if bf16 {
			write = writeBF16
		}
		if err := write(w, t); err != nil {
			return err
		}
	}
	return nil
}

// writeBF16 writes t's float32 values rounded to bfloat16, little-endian,
// a chunk at a time: a copy the size of the tensor would be a model's
// memory again for a large one.
func writeBF16(w io.Writer, t Tensor) error {
	buf := make([]byte, 2*min(len(t.F32), chunk/2))
	for v := t.F32; len(v) > 0; {
		n := min(len(v), len(buf)/2)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint16(buf[2*i:], bf16Bits(x))
		}
		if _, err := w.Write(buf[:2*n]); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

// littleEndian is whether this machine stores numbers as the file does,
// so that a tensor's memory can be written as it is.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// writeData writes t's values, little-endian. On a little-endian machine
// that is its memory as it is: no copy the size of the tensor.
func writeData(w io.Writer, t Tensor) error {
	if !littleEndian {
		if t.F32 != nil {
			return binary.Write(w, binary.LittleEndian, t.F32)
		}
		return binary.Write(w, binary.LittleEndian, t.F64)
	}
	var raw []byte
	switch {
	case len(t.F32) > 0:
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&t.F32[0])), 4*len(t.F32))
	case len(t.F64) > 0:
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&t.F64[0])), 8*len(t.F64))
	}
	_, err := w.Write(raw)
	return err
}

// headerEntry is one tensor's line in the header; the field order is the
// one the safetensors reference writes.
type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// encodeHeader checks the tensors and returns the JSON header, padded with
// spaces to a multiple of 8 bytes so the data that follows is aligned, and
// the size of that data. Tensors are laid out contiguously in the given
// order; with bf16, as BF16 (float32 tensors only).
func encodeHeader(tensors []Tensor, meta map[string]string, bf16 bool) ([]byte, int64, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if len(meta) > 0 {
		m, err := json.Marshal(meta) // keys sorted, so output is reproducible
		if err != nil {
			return nil, 0, err
		}
		buf.WriteString(`"__metadata__":`)
		buf.Write(m)
	}
	seen := make(map[string]bool, len(tensors))
	var offset int64
	for _, t := range tensors {
		n, err := checkTensor(t)
		if err != nil {
			return nil, 0, err
		}
		if seen[t.Name] {
			return nil, 0, fmt.Errorf("tensor %q is given twice", t.Name)
		}
		seen[t.Name] = true

		dtype := t.DType()
		if bf16 {
			if t.F32 == nil {
				return nil, 0, fmt.Errorf("tensor %q is float64: only float32 tensors are stored as BF16", t.Name)
			}
			dtype = "BF16"
		}
		size := n * dtypeSize[dtype]
		shape := t.Shape
		if shape == nil {
			shape = []int{} // a scalar: JSON [] rather than null
		}
		name, err := json.Marshal(t.Name)
		if err != nil {
			return nil, 0, err
		}
		entry, err := json.Marshal(headerEntry{dtype, shape, [2]int64{offset, offset + size}})
		if err != nil {
			return nil, 0, err
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(entry)
		offset += size
	}
	buf.WriteByte('}')
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	return buf.Bytes(), offset, nil
}

// checkTensor returns the number of elements of t after checking that its
// name, shape and data agree.
func checkTensor(t Tensor) (int64, error) {
	if t.Name == "" || t.Name == "__metadata__" {
		return 0, fmt.Errorf("tensor name %q is reserved or empty", t.Name)
	}
	if (t.F32 == nil) == (t.F64 == nil) {
		return 0, fmt.Errorf("tensor %q must have exactly one of F32 and F64 set", t.Name)
	}
	n, err := numElements(t.Shape)
	if err != nil {
		return 0, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if have := int64(len(t.F32) + len(t.F64)); have != n {
		return 0, fmt.Errorf("tensor %q has shape %v (%d elements) but %d values", t.Name, t.Shape, n, have)
	}
	return n, nil
}

// numElements is the product of shape (1 for a scalar, shape []). It refuses
// negative dimensions and products whose size in bytes, at up to 8 bytes per
// element, would overflow an int64.
func numElements(shape []int) (int64, error) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape[%d] is negative (%d)", i, d)
		}
		if d != 0 && n > math.MaxInt64/8/int64(d) {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		n *= int64(d)
	}
	return n, nil
}
