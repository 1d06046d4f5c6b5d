package modelfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/gptg/gptg/internal/inputfile"
)

// Read loads a model file, checking everything a hostile file could get
// wrong before allocating anything sized by it:
//
//   - the file size, against limits.MaxFileSize;
//   - the header length: at least 2 ("{}"), inside the file, at most 100 MB;
//   - the header: a JSON object without repeated keys, whose "__metadata__"
//     maps strings to strings and whose other entries are tensors with
//     exactly dtype (F32, F64 or BF16, read as float32), shape (non-negative integers whose product
//     does not overflow and respects limits.MaxElements) and data_offsets
//     ([begin, end] with end-begin matching dtype and shape);
//   - the layout: tensors inside the data, not overlapping, and covering it
//     without gaps, as the safetensors format requires.
//
// Every error is one line starting with path.
func Read(path string, limits Limits) (*File, error) {
	f := &File{Tensors: map[string]Tensor{}}
	meta, err := read(path, limits, nil, func(t Tensor) error {
		f.Tensors[t.Name] = t
		f.Order = append(f.Order, t.Name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.Meta = meta
	return f, nil
}

// Stream reads a model file with all of Read's checks, but holds one
// tensor at a time: header sees the metadata and every tensor's name and
// shape (a Tensor whose F32 or F64, empty and non-nil, says its dtype as
// read: BF16 is read as F32; Stored says the file's) in the order of their data, before any of it
// is read (after limits.BeforeData); then each sees each tensor with its
// values, in that order, and the tensor is dropped when each returns. A
// command that only checks or summarizes a model's tensors (inspect) so
// takes the largest tensor's memory, not the model's.
func Stream(path string, limits Limits, header func(meta map[string]string, tensors []Tensor) error, each func(Tensor) error) error {
	_, err := read(path, limits, header, each)
	return err
}

// ReadMeta reads only a model file's header, with all of Read's checks of
// it, and returns its metadata: what a caller needs who wants the step of
// a 200 MB checkpoint, not its tensors.
func ReadMeta(path string, limits Limits) (map[string]string, error) {
	return read(path, limits, nil, nil)
}

// read is Stream (shapes is its header), returning the metadata; without
// each it stops after the header.
func read(path string, limits Limits, shapes func(map[string]string, []Tensor) error, each func(Tensor) error) (map[string]string, error) {
	maxSize := limits.MaxFileSize
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	// A regular file only: opening a FIFO would block, a device would be
	// read forever. The size limit is checked below, with its own message.
	f, size, err := inputfile.Open(path, 0)
	var ie *inputfile.Error
	switch {
	case errors.As(err, &ie) && strings.HasPrefix(ie.Problem, "is a directory"):
		return nil, fail(path, "is a directory, not a model file")
	case errors.As(err, &ie):
		return nil, fail(path, "%s", ie.Problem)
	case err != nil:
		return nil, pathError(path, err)
	}
	defer f.Close()
	switch {
	case size == 0:
		return nil, fail(path, "file is empty")
	case size < 8:
		return nil, fail(path, "file is only %d bytes, too short for the 8-byte header length", size)
	case size > maxSize:
		return nil, fail(path, "file is %d bytes, more than the limit of %d", size, maxSize)
	}

	r := bufio.NewReaderSize(f, 1<<16)
	header, err := readHeader(r, path, size)
	if err != nil {
		return nil, err
	}

	entries, meta, err := parseHeader(header, limits)
	if err != nil {
		return nil, fail(path, "%w", err)
	}
	if err := checkLayout(entries, size-8-int64(len(header))); err != nil {
		return nil, fail(path, "%w", err)
	}

	if each == nil {
		return meta, nil
	}
	if limits.BeforeData != nil {
		if err := limits.BeforeData(meta, size-8-int64(len(header))); err != nil {
			return nil, err
		}
	}
	if shapes != nil {
		ts := make([]Tensor, len(entries))
		for i, e := range entries {
			ts[i] = Tensor{Name: e.name, Shape: e.shape, Stored: e.dtype}
			if e.dtype == "F32" || e.dtype == "BF16" {
				ts[i].F32 = []float32{}
			} else {
				ts[i].F64 = []float64{}
			}
		}
		if err := shapes(meta, ts); err != nil {
			return nil, err
		}
	}
	if err := readTensors(r, path, entries, size, each); err != nil {
		return nil, err
	}
	return meta, nil
}

// readHeader reads the safetensors header: its 8-byte length, checked
// against the file's size before anything that large is allocated, then
// the JSON itself. A file that is plainly something else (a pickle, a zip)
// is named as such rather than as a bad header length.
func readHeader(r *bufio.Reader, path string, size int64) ([]byte, error) {
	start, _ := r.Peek(512) // for saying what the file is if not safetensors
	start = bytes.Clone(start)
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, fail(path, "reading the header length: %w", err)
	}
	// Compare in uint64: a hostile length may not fit an int64.
	if looks := lookalike(start); looks != "" && (n < 2 || n > uint64(size-8) || len(start) <= 8 || start[8] != '{') {
		return nil, fail(path, "not a safetensors model file: %s", looks)
	}
	switch {
	case n < 2:
		return nil, fail(path, "not a safetensors model file: header length %d is too small (the empty header {} has 2 bytes)", n)
	case n > uint64(size-8):
		return nil, fail(path, "not a safetensors model file: header length %d exceeds the file size %d (%d bytes follow the length field)", n, size, size-8)
	case n > maxHeaderSize:
		return nil, fail(path, "header length %d exceeds the safetensors limit of %d bytes", n, maxHeaderSize)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, fail(path, "reading the header: %w", err)
	}
	return header, nil
}

// readTensors reads the tensors' data, in the order of the file, handing
// each to each.
func readTensors(r *bufio.Reader, path string, entries []entry, size int64, each func(Tensor) error) error {
	var err error
	// checkLayout sorted the entries by offset and proved they tile the
	// data, so reading them in order consumes the rest of the file exactly.
	// One buffer serves every tensor: one per tensor would be as many
	// megabytes of garbage as the file has tensors.
	buf := make([]byte, min(chunk, (size+7)&^7))
	for _, e := range entries {
		t := Tensor{Name: e.name, Shape: e.shape, Stored: e.dtype}
		n := (e.end - e.begin) / dtypeSize[e.dtype]
		switch e.dtype {
		case "F32":
			t.F32 = make([]float32, n)
			err = readF32(r, t.F32, buf)
		case "BF16":
			t.F32 = make([]float32, n)
			err = readBF16(r, t.F32, buf)
		default:
			t.F64 = make([]float64, n)
			err = readF64(r, t.F64, buf)
		}
		if err != nil {
			// Only possible if the file changed after the size check.
			return fail(path, "reading tensor %q: %w", e.name, err)
		}
		if err := each(t); err != nil {
			return err
		}
	}
	return nil
}

// chunk is how many bytes readF32 and readF64 decode at a time:
// binary.Read of a whole slice would first allocate its bytes as large
// again, twice a model's memory for a moment.
const chunk = 1 << 20

// readF32 fills dst with little-endian float32s read from r, through buf
// (of a multiple of 8 bytes).
func readF32(r io.Reader, dst []float32, buf []byte) error {
	for len(dst) > 0 {
		b := buf[:min(len(buf), 4*len(dst))]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range len(b) / 4 {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		dst = dst[len(b)/4:]
	}
	return nil
}

// readF64 fills dst with little-endian float64s read from r, through buf
// (of a multiple of 8 bytes).
func readF64(r io.Reader, dst []float64, buf []byte) error {
	for len(dst) > 0 {
		b := buf[:min(len(buf), 8*len(dst))]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range len(b) / 8 {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		dst = dst[len(b)/8:]
	}
	return nil
}

// pathError drops the path that *fs.PathError repeats, since fail already
// starts with it, and keeps the cause for errors.Is(err, fs.ErrNotExist).
func pathError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fail(path, "cannot %s: %w", pe.Op, pe.Err)
	}
	return fail(path, "%w", err)
}

// lookalike says what a file that is not a safetensors file looks like
// from its first bytes, when they make that plain: gptg sample given a
// config instead of a model should say so, not report a header length of
// 7142819395664027683. It returns "" for binary data it cannot name.
func lookalike(start []byte) string {
	if bytes.HasPrefix(start, []byte("PK\x03\x04")) {
		return "it is a zip archive (PyTorch saves .pt checkpoints so; gptg import reads nanoGPT's)"
	}
	text := start
	if len(text) == 512 { // cut mid-rune at worst: drop the partial rune
		for i := 0; i < utf8.UTFMax && !utf8.Valid(text); i++ {
			text = text[:len(text)-1]
		}
	}
	if !utf8.Valid(text) || bytes.IndexFunc(text, func(r rune) bool {
		return r < ' ' && r != '\n' && r != '\r' && r != '\t'
	}) >= 0 {
		return ""
	}
	for line := range strings.Lines(string(text)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"),
			strings.Contains(line, "=") && !strings.HasPrefix(line, "{"):
			return "it is text that looks like a TOML config (a model file is the model.safetensors that gptg train writes into the run folder)"
		case strings.HasPrefix(line, "{") || strings.HasPrefix(line, "["):
			return "it is text that looks like JSON (a model file is the model.safetensors that gptg train writes into the run folder)"
		}
		break
	}
	return "it is a text file (a model file is the model.safetensors that gptg train writes into the run folder)"
}
