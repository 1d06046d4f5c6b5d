// Package modelfile reads and writes gptg model files: standard safetensors
// files (8-byte little-endian header length N, N bytes of JSON header, then
// the raw little-endian tensor data) holding F32 or F64 tensors, with string
// metadata such as "format", "model", "tokenizer" and "vocab". A file may
// also hold BF16 tensors (WriteBF16, gptg export --dtype bfloat16): Read
// widens them to float32, exactly, so the rest of gptg sees an F32 file.
//
// Read treats its input as hostile: a corrupt or malicious file gives a
// one-line error starting with the path, never a panic or an allocation
// larger than the file itself.
package modelfile

import (
	"fmt"

	"github.com/gptg/gptg/internal/quote"
)

// Tensor is one named array in row-major (C) order. Exactly one of F32 and
// F64 is non-nil; it picks the dtype written to the file. A tensor with no
// elements must still set its slice to an empty, non-nil one.
type Tensor struct {
	Name  string
	Shape []int // empty for a scalar
	F32   []float32
	F64   []float64
	// Stored is the dtype the file holds the tensor in ("F32", "F64" or
	// "BF16"), set by Read and Stream: a BF16 tensor is read into F32,
	// and only Stored tells it from an F32 one. The writers never look at
	// it (F32 or F64 picks theirs, the function called BF16).
	Stored string
}

// Len is the number of values the tensor holds (of whichever type it has).
func (t Tensor) Len() int { return len(t.F32) + len(t.F64) }

// DType is "F32" or "F64", as named in the header of a file Write writes.
func (t Tensor) DType() string {
	if t.F32 != nil {
		return "F32"
	}
	return "F64"
}

// DtypeCount is how many of a file's tensors, and of their values, one
// dtype stores.
type DtypeCount struct {
	Dtype   string // "F32", "F64" or "BF16", as the header names it
	Tensors int
	Values  int64
}

// CountDtypes counts tensors by the dtype the file stores them in (their
// Stored, from Read or Stream), from their shapes, so that the tensors
// Stream's header gives, without values, count as well. The counts are
// in the order F32, BF16, F64, each present once at most.
func CountDtypes(tensors []Tensor) []DtypeCount {
	var counts []DtypeCount
	for _, dtype := range []string{"F32", "BF16", "F64"} {
		c := DtypeCount{Dtype: dtype}
		for _, t := range tensors {
			if t.Stored != dtype {
				continue
			}
			n := int64(1)
			for _, d := range t.Shape {
				n *= int64(d)
			}
			c.Tensors++
			c.Values += n
		}
		if c.Tensors > 0 {
			counts = append(counts, c)
		}
	}
	return counts
}

// File is the content of a model file.
type File struct {
	Meta    map[string]string // never nil
	Tensors map[string]Tensor
	Order   []string // tensor names in the order of their data in the file
}

// Limits bounds what Read accepts. Zero fields take the defaults.
type Limits struct {
	// MaxFileSize is the largest file Read will open, in bytes
	// (default DefaultMaxFileSize).
	MaxFileSize int64
	// MaxTensors caps the number of tensors (default DefaultMaxTensors).
	MaxTensors int
	// MaxElements caps the elements of any one tensor (default: no cap
	// beyond what the file size allows).
	MaxElements int64
	// BeforeData, if set, sees the checked header's metadata and the size
	// in bytes of the tensor data before any of it is read: a caller that
	// knows from the metadata how large the model is refuses a file whose
	// tensors are far larger (a 2 GB tensor nobody asked for would
	// otherwise be read into memory first, and refused after).
	BeforeData func(meta map[string]string, dataBytes int64) error
}

const (
	// DefaultMaxFileSize is 2 GiB, far above any model this CPU trainer makes.
	DefaultMaxFileSize = 2 << 30
	// maxHeaderSize is the safetensors reference implementation's limit.
	maxHeaderSize = 100_000_000
)

// dtypeSize maps the dtypes gptg uses to their element size in bytes.
var dtypeSize = map[string]int64{"F32": 4, "F64": 8, "BF16": 2}

// fail formats an error that starts with the file's path, as every error of
// this package does, so a user sees at once which file is wrong. A %w verb
// in format still wraps its argument.
func fail(path, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{quote.Name(path)}, args...)...)
}
