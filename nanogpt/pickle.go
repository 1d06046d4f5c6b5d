package nanogpt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/gptg/gptg/internal/quote"
)

// A pickle is a program for a small stack machine whose GLOBAL opcode can
// name any Python callable, which is why Python's pickle.load executes
// arbitrary code. This file reads one without executing anything, in two
// passes over bytes already in memory:
//
//  1. scan walks the opcodes and refuses, with one line, any global outside
//     the short list a checkpoint needs, any opcode a checkpoint does not
//     use, and any length that reaches past the end of the data (gopickle
//     allocates a length before reading it, so an unchecked 8-byte length
//     would be an allocation bomb);
//  2. gopickle's Unpickler then runs the program with FindClass and
//     PersistentLoad answering from that list: a tensor becomes a tensorRef
//     that records where its numbers are, and nothing is read yet.

// opArg is how the bytes after an opcode are laid out.
type opArg int

const (
	argNone    opArg = iota
	argLine          // up to and including a newline
	argLines2        // two newline-terminated lines (GLOBAL)
	argFixed         // a fixed number of bytes
	argCounted       // a little-endian length of size bytes, then that many bytes
)

type opInfo struct {
	name string
	arg  opArg
	size int // bytes for argFixed, bytes of the length for argCounted
}

// opcodes lists every opcode a torch.save checkpoint (protocol 2) or a
// pickle.dump of plain containers (protocols 2 to 5) uses. Anything else
// (INST, OBJ, STACK_GLOBAL, extension registry, out-of-band buffers, ...)
// is refused: a checkpoint never needs it.
var opcodes = map[byte]opInfo{
	'(': {"MARK", argNone, 0}, '.': {"STOP", argNone, 0}, '0': {"POP", argNone, 0},
	'1': {"POP_MARK", argNone, 0}, '2': {"DUP", argNone, 0}, 'N': {"NONE", argNone, 0},
	'Q': {"BINPERSID", argNone, 0}, 'R': {"REDUCE", argNone, 0}, 'a': {"APPEND", argNone, 0},
	'b': {"BUILD", argNone, 0}, 'd': {"DICT", argNone, 0}, '}': {"EMPTY_DICT", argNone, 0},
	'e': {"APPENDS", argNone, 0}, 'l': {"LIST", argNone, 0}, ']': {"EMPTY_LIST", argNone, 0},
	's': {"SETITEM", argNone, 0}, 't': {"TUPLE", argNone, 0}, ')': {"EMPTY_TUPLE", argNone, 0},
	'u': {"SETITEMS", argNone, 0}, 0x85: {"TUPLE1", argNone, 0}, 0x86: {"TUPLE2", argNone, 0},
	0x87: {"TUPLE3", argNone, 0}, 0x88: {"NEWTRUE", argNone, 0}, 0x89: {"NEWFALSE", argNone, 0},
	0x8f: {"EMPTY_SET", argNone, 0}, 0x90: {"ADDITEMS", argNone, 0}, 0x91: {"FROZENSET", argNone, 0},
	0x94: {"MEMOIZE", argNone, 0},

	'I': {"INT", argLine, 0}, 'L': {"LONG", argLine, 0}, 'F': {"FLOAT", argLine, 0},
	'S': {"STRING", argLine, 0}, 'V': {"UNICODE", argLine, 0}, 'g': {"GET", argLine, 0},
	'p': {"PUT", argLine, 0},
	'c': {"GLOBAL", argLines2, 0},

	'K': {"BININT1", argFixed, 1}, 'h': {"BINGET", argFixed, 1}, 'q': {"BINPUT", argFixed, 1},
	0x80: {"PROTO", argFixed, 1}, 'M': {"BININT2", argFixed, 2}, 'J': {"BININT", argFixed, 4},
	'j': {"LONG_BINGET", argFixed, 4}, 'r': {"LONG_BINPUT", argFixed, 4}, 'G': {"BINFLOAT", argFixed, 8},
	// FRAME's 8 bytes are the length of the opcodes that follow, which
	// this scan reads as opcodes like any others.
	0x95: {"FRAME", argFixed, 8},

	'U': {"SHORT_BINSTRING", argCounted, 1}, 'C': {"SHORT_BINBYTES", argCounted, 1},
	0x8c: {"SHORT_BINUNICODE", argCounted, 1}, 0x8a: {"LONG1", argCounted, 1},
	'T': {"BINSTRING", argCounted, 4}, 'X': {"BINUNICODE", argCounted, 4},
	'B': {"BINBYTES", argCounted, 4}, 0x8b: {"LONG4", argCounted, 4},
	0x8d: {"BINUNICODE8", argCounted, 8}, 0x8e: {"BINBYTES8", argCounted, 8},
	0x96: {"BYTEARRAY8", argCounted, 8},
}

// maxOpcodes bounds the length of the program: a nanoGPT checkpoint of 64
// blocks, optimizer state included, needs a few tens of thousands.
const maxOpcodes = 2_000_000

// Bounds on what a checkpoint's numbers can be, checked while scanning and
// before anything is decoded: Python's integers have no size, and decoding
// one of a million digits takes gopickle (math/big) quadratic time.
const (
	// maxLongBytes bounds LONG1 and LONG4: a checkpoint's integers (sizes,
	// step counts, seeds) fit in 64 bits, which pickle writes in 9 bytes.
	maxLongBytes = 16
	// maxNumberLine bounds the text of INT, LONG, FLOAT, GET and PUT
	// (protocol 0): 40 digits, or a float's repr, are far less.
	maxNumberLine = 64
	// maxGlobalLine bounds each of GLOBAL's two lines (module and name).
	maxGlobalLine = 256
)

// scan checks data as described at the top of this file; allowed is the
// set of "module.name" globals this kind of pickle may use. It returns the
// program gopickle is to run: data itself, or, when data holds protocol 0
// UNICODE strings, a copy with each one decoded from Python's
// raw-unicode-escape (Latin-1 bytes and \uXXXX escapes, which gopickle
// would pass on undecoded) and written as BINUNICODE.
func scan(data []byte, allowed map[string]bool) ([]byte, error) {
	pos, count := 0, 0
	var out []byte // the rewritten program, once a UNICODE needs it
	copied := 0    // data[:copied] is in out
	framed := false
	for pos < len(data) {
		at := pos
		op := data[pos]
		pos++
		if count++; count > maxOpcodes {
			return nil, fmt.Errorf("more than %d pickle opcodes", maxOpcodes)
		}
		info, ok := opcodes[op]
		if !ok {
			return nil, fmt.Errorf("pickle opcode 0x%02x at byte %d is not one a checkpoint uses; refused", op, at)
		}
		rest := len(data) - pos
		switch info.arg {
		case argLine, argLines2:
			parts, next, err := readLines(data, pos, at, op, info)
			if err != nil {
				return nil, err
			}
			pos = next
			if info.arg == argLines2 {
				name := parts[0] + "." + parts[1]
				if !allowed[name] {
					return nil, fmt.Errorf("pickle names the global %s, which is not one a nanoGPT checkpoint uses; refused without running it", quote.Value(name))
				}
			}
			if op == 'V' {
				if framed {
					return nil, fmt.Errorf("pickle mixes protocol 0 strings (UNICODE at byte %d) with protocol 4 frames; refused", at)
				}
				s, err := rawUnicodeEscape(parts[0])
				if err != nil {
					return nil, fmt.Errorf("pickle UNICODE at byte %d: %v", at, err)
				}
				out = append(out, data[copied:at]...)
				out = append(out, 'X')
				out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
				out = append(out, s...)
				copied = pos
			}
		case argFixed:
			if rest < info.size {
				return nil, fmt.Errorf("pickle ends inside %s at byte %d", info.name, at)
			}
			if op == 0x95 {
				if n := binary.LittleEndian.Uint64(data[pos:]); n > uint64(rest-8) {
					return nil, fmt.Errorf("pickle FRAME at byte %d claims %d bytes, only %d remain", at, n, rest-8)
				}
				if out != nil {
					return nil, fmt.Errorf("pickle mixes protocol 0 strings with protocol 4 frames (FRAME at byte %d); refused", at)
				}
				framed = true
			}
			pos += info.size
		case argCounted:
			next, err := skipCounted(data, pos, at, op, info)
			if err != nil {
				return nil, err
			}
			pos = next
		}
		if op == '.' {
			if out == nil {
				return data[:pos], nil
			}
			return append(out, data[copied:pos]...), nil
		}
	}
	return nil, fmt.Errorf("pickle ends without STOP")
}

// readLines reads the newline-ended argument of op (at byte at), one line
// or GLOBAL's two, from data[pos:], each within its opcode's bound; next
// is where the following opcode starts.
func readLines(data []byte, pos, at int, op byte, info opInfo) (parts []string, next int, err error) {
	lines := 1
	if info.arg == argLines2 {
		lines = 2
	}
	limit := len(data)
	switch op {
	case 'I', 'L', 'F', 'g', 'p':
		limit = maxNumberLine
	case 'c':
		limit = maxGlobalLine
	}
	for range lines {
		end := bytes.IndexByte(data[pos:min(len(data), pos+limit+1)], '\n')
		if end < 0 {
			if pos+limit < len(data) {
				return nil, 0, fmt.Errorf("pickle %s at byte %d is a line of more than %d bytes; a checkpoint's are shorter", info.name, at, limit)
			}
			return nil, 0, fmt.Errorf("pickle ends inside %s at byte %d", info.name, at)
		}
		parts = append(parts, string(data[pos:pos+end]))
		pos += end + 1
	}
	return parts, pos, nil
}

// skipCounted skips the argument of op (at byte at) that is a count of
// bytes, then that many bytes, refusing a count past the data's end or an
// integer wider than a checkpoint's; next is where the following opcode
// starts.
func skipCounted(data []byte, pos, at int, op byte, info opInfo) (next int, err error) {
	rest := len(data) - pos
	if rest < info.size {
		return 0, fmt.Errorf("pickle ends inside %s at byte %d", info.name, at)
	}
	var n uint64
	switch info.size {
	case 1:
		n = uint64(data[pos])
	case 4:
		n = uint64(binary.LittleEndian.Uint32(data[pos:]))
	case 8:
		n = binary.LittleEndian.Uint64(data[pos:])
	}
	pos += info.size
	if n > uint64(len(data)-pos) {
		return 0, fmt.Errorf("pickle %s at byte %d claims %d bytes, only %d remain", info.name, at, n, len(data)-pos)
	}
	if (op == 0x8a || op == 0x8b) && n > maxLongBytes {
		return 0, fmt.Errorf("pickle %s at byte %d is an integer of %d bytes; a checkpoint's integers fit in %d", info.name, at, n, maxLongBytes)
	}
	pos += int(n)
	return pos, nil
}

// rawUnicodeEscape decodes Python's raw-unicode-escape, the encoding of
// protocol 0 UNICODE strings: each byte is a Latin-1 character, except
// \uXXXX and \UXXXXXXXX, which name one (pickle writes a newline, a
// backslash and the characters past Latin-1 so).
func rawUnicodeEscape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') {
			n := 4
			if s[i+1] == 'U' {
				n = 8
			}
			if i+2+n > len(s) {
				return "", fmt.Errorf("truncated \\%c escape", s[i+1])
			}
			r, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32)
			if err != nil || r > unicode.MaxRune || (r >= 0xd800 && r < 0xe000) {
				return "", fmt.Errorf("bad escape %s", quote.Value(s[i:i+2+n]))
			}
			b.WriteRune(rune(r))
			i += 1 + n
			continue
		}
		b.WriteRune(rune(c)) // Latin-1
	}
	return b.String(), nil
}

// unpickle scans data, then runs it with classes resolving the allowed
// globals. persistent, if not nil, answers BINPERSID (torch's storages).
// gopickle's panics (a hostile program can, for instance, use a list as
// a dictionary key) come back as errors.
func unpickle(data []byte, classes map[string]any, persistent func(any) (any, error)) (value any, err error) {
	allowed := map[string]bool{}
	for name := range classes {
		allowed[name] = true
	}
	data, err = scan(data, allowed)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			value, err = nil, fmt.Errorf("malformed pickle: %v", r)
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(data))
	u.FindClass = func(module, name string) (any, error) {
		if c, ok := classes[module+"."+name]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("pickle names the global %q; refused", module+"."+name)
	}
	u.PersistentLoad = func(id any) (any, error) {
		if persistent == nil {
			return nil, fmt.Errorf("pickle refers to external data; refused")
		}
		return persistent(id)
	}
	v, err := u.Load()
	if err != nil {
		return nil, fmt.Errorf("malformed pickle: %v", err)
	}
	return v, nil
}

// dictOf returns the string-keyed entries of a pickled dict or OrderedDict,
// in order.
func dictOf(v any) (keys []string, values map[string]any, ok bool) {
	values = map[string]any{}
	add := func(k, val any) bool {
		s, isStr := k.(string)
		if !isStr {
			return false
		}
		if _, dup := values[s]; !dup {
			keys = append(keys, s)
		}
		values[s] = val
		return true
	}
	switch d := v.(type) {
	case *types.Dict:
		for _, e := range *d {
			if !add(e.Key, e.Value) {
				return nil, nil, false
			}
		}
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			entry := e.Value.(*types.OrderedDictEntry)
			if !add(entry.Key, entry.Value) {
				return nil, nil, false
			}
		}
	default:
		return nil, nil, false
	}
	return keys, values, true
}

// intOf converts a pickled integer (gopickle gives int, or *big.Int for
// LONG opcodes) to an int.
func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case *big.Int:
		if n.IsInt64() && n.Int64() == int64(int(n.Int64())) {
			return int(n.Int64()), true
		}
	case bool:
		return 0, false
	}
	return 0, false
}

// tupleOf returns the elements of a pickled tuple.
func tupleOf(v any) ([]any, bool) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, false
	}
	return *t, true
}
