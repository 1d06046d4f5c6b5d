package modelfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// entry is one tensor as the header describes it.
type entry struct {
	name       string
	dtype      string
	shape      []int
	begin, end int64 // byte offsets into the data region
}

// parseHeader decodes and checks the JSON header. It returns the tensors in
// header order and the metadata (empty, not nil, when absent).
func parseHeader(header []byte, limits Limits) ([]entry, map[string]string, error) {
	// The JSON decoder would turn invalid UTF-8 into U+FFFD without a word,
	// and a vocabulary's token into another one: a header is UTF-8 or refused.
	if !utf8.Valid(header) {
		at := 0
		for at < len(header) {
			r, n := utf8.DecodeRune(header[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return nil, nil, fmt.Errorf("header is not valid UTF-8 (byte 0x%02x at offset %d of the header): the file is damaged", header[at], at)
	}
	if err := CheckSurrogates(header); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	var syntax *json.SyntaxError
	if err := json.Unmarshal(header, new(json.RawMessage)); errors.As(err, &syntax) {
		return nil, nil, fmt.Errorf("header is not valid JSON: %v (after %d bytes of the header)", err, syntax.Offset)
	} else if err != nil {
		return nil, nil, fmt.Errorf("header is not valid JSON: %w", err)
	}
	if kind := jsonKind(header); kind != "object" {
		return nil, nil, fmt.Errorf("header is a JSON %s, not an object", kind)
	}

	// A Decoder walks the object key by key, which keeps header order and,
	// unlike decoding into a map, notices a key given twice.
	dec := json.NewDecoder(bytes.NewReader(header))
	if _, err := dec.Token(); err != nil { // the opening '{'
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	maxTensors := limits.MaxTensors
	if maxTensors <= 0 {
		maxTensors = DefaultMaxTensors
	}
	meta := map[string]string{}
	var entries []entry
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header: %w", err)
		}
		key, _ := tok.(string) // always a string inside a valid object
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("header: %w", err)
		}
		if seen[key] {
			return nil, nil, fmt.Errorf("header has the key %q twice", key)
		}
		seen[key] = true

		if key == "__metadata__" {
			if meta, err = parseMetadata(raw); err != nil {
				return nil, nil, err
			}
			continue
		}
		if len(entries) == maxTensors {
			return nil, nil, fmt.Errorf("header lists more than %d tensors", maxTensors)
		}
		e, err := parseEntry(key, raw, limits)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", key, err)
		}
		entries = append(entries, e)
	}
	return entries, meta, nil
}

// DefaultMaxTensors caps the tensors of a file when Limits.MaxTensors is
// 0. A gptg checkpoint of the largest model a config allows (64 blocks)
// has about 3,000; a header of a million empty tensors would take gigabytes
// to parse.
const DefaultMaxTensors = 1 << 16

// parseMetadata checks that __metadata__ maps strings to strings, each
// key once.
func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if kind := jsonKind(raw); kind != "object" {
		return nil, fmt.Errorf("__metadata__ is a JSON %s, not an object", kind)
	}
	if err := UniqueKeys(raw); err != nil {
		return nil, fmt.Errorf("__metadata__: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("__metadata__: %w", err)
	}
	meta := make(map[string]string, len(fields))
	for _, k := range slices.Sorted(maps.Keys(fields)) { // sorted: the same error every run
		var s string
		if kind := jsonKind(fields[k]); kind != "string" {
			return nil, fmt.Errorf("__metadata__ %q is a JSON %s, not a string", k, kind)
		}
		if err := json.Unmarshal(fields[k], &s); err != nil {
			return nil, fmt.Errorf("__metadata__ %q: %w", k, err)
		}
		meta[k] = s
	}
	return meta, nil
}

// parseEntry checks one tensor's header entry on its own; checkLayout then
// checks the entries against each other and the data size.
func parseEntry(name string, raw json.RawMessage, limits Limits) (entry, error) {
	e := entry{name: name}
	if kind := jsonKind(raw); kind != "object" {
		return e, fmt.Errorf("entry is a JSON %s, not an object", kind)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return e, err
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k != "dtype" && k != "shape" && k != "data_offsets" {
			return e, fmt.Errorf("unknown field %q (want dtype, shape and data_offsets)", k)
		}
	}
	for _, k := range []string{"dtype", "shape", "data_offsets"} {
		if fields[k] == nil {
			return e, fmt.Errorf("no %s field", k)
		}
	}

	if kind := jsonKind(fields["dtype"]); kind != "string" {
		return e, fmt.Errorf("dtype is a JSON %s, not a string", kind)
	}
	if err := json.Unmarshal(fields["dtype"], &e.dtype); err != nil {
		return e, err
	}
	elemSize, ok := dtypeSize[e.dtype]
	if !ok {
		return e, fmt.Errorf("dtype %q is not supported (gptg model files hold F32, F64 or BF16)", e.dtype)
	}

	dims, err := parseInts("shape", fields["shape"])
	if err != nil {
		return e, err
	}
	e.shape = make([]int, len(dims))
	for i, d := range dims {
		if d > math.MaxInt {
			return e, fmt.Errorf("shape[%d] is too large", i)
		}
		e.shape[i] = int(d)
	}
	count, err := numElements(e.shape)
	if err != nil {
		return e, err
	}
	if limits.MaxElements > 0 && count > limits.MaxElements {
		return e, fmt.Errorf("shape %v has %d elements, more than the limit of %d", e.shape, count, limits.MaxElements)
	}

	offsets, err := parseInts("data_offsets", fields["data_offsets"])
	if err != nil {
		return e, err
	}
	if len(offsets) != 2 {
		return e, fmt.Errorf("data_offsets has %d numbers, want 2 (begin and end)", len(offsets))
	}
	e.begin, e.end = offsets[0], offsets[1]
	if e.end < e.begin {
		return e, fmt.Errorf("data_offsets [%d, %d] end before they begin", e.begin, e.end)
	}
	// numElements keeps count*8 within int64, so this cannot overflow.
	if want := count * elemSize; e.end-e.begin != want {
		return e, fmt.Errorf("data_offsets [%d, %d] span %d bytes, but %s %v needs %d",
			e.begin, e.end, e.end-e.begin, e.dtype, e.shape, want)
	}
	return e, nil
}

// parseInts decodes a JSON array of non-negative integers.
func parseInts(field string, raw json.RawMessage) ([]int64, error) {
	if kind := jsonKind(raw); kind != "array" {
		return nil, fmt.Errorf("%s is a JSON %s, not an array", field, kind)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	out := make([]int64, len(items))
	for i, item := range items {
		if kind := jsonKind(item); kind != "number" {
			return nil, fmt.Errorf("%s[%d] is a JSON %s, not an integer", field, i, kind)
		}
		s := string(item)
		if s[0] == '-' {
			return nil, fmt.Errorf("%s[%d] is negative (%s)", field, i, abbreviate(s))
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s[%d] is too large (%s)", field, i, abbreviate(s))
		}
		if err != nil {
			return nil, fmt.Errorf("%s[%d] is not a whole number (%s)", field, i, abbreviate(s))
		}
		out[i] = v
	}
	return out, nil
}

// checkLayout checks that the tensors lie inside the data region of
// dataSize bytes and tile it exactly, as the safetensors format requires:
// no overlaps (two tensors sharing bytes) and no gaps (bytes nobody reads,
// a sign of a damaged or tampered file). It sorts entries by offset.
func checkLayout(entries []entry, dataSize int64) error {
	for _, e := range entries {
		if e.end > dataSize {
			return fmt.Errorf("tensor %q ends at byte %d, past the end of the data (%d bytes): the file is truncated or its header is wrong",
				e.name, e.end, dataSize)
		}
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if a.begin != b.begin {
			return cmp.Compare(a.begin, b.begin)
		}
		return cmp.Compare(a.end, b.end)
	})
	var pos int64 // end of the data covered so far
	for i, e := range entries {
		if e.begin < pos {
			prev := entries[i-1]
			return fmt.Errorf("tensors %q (bytes %d to %d) and %q (bytes %d to %d) overlap",
				prev.name, prev.begin, prev.end, e.name, e.begin, e.end)
		}
		if e.begin > pos {
			return fmt.Errorf("data bytes %d to %d belong to no tensor (a gap before tensor %q)", pos, e.begin, e.name)
		}
		pos = e.end
	}
	if pos < dataSize {
		return fmt.Errorf("data bytes %d to %d belong to no tensor (after the last one)", pos, dataSize)
	}
	return nil
}

// jsonKind names the kind of a valid JSON value from its first byte.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// abbreviate keeps error messages short when a hostile header holds a
// number literal thousands of digits long.
func abbreviate(s string) string {
	if len(s) > 24 {
		return s[:20] + "..."
	}
	return s
}

// UniqueKeys reports the first object key that appears twice in the same
// object anywhere in the JSON text data. encoding/json keeps the last of
// them silently, so a file could say one thing to gptg and another to a
// reader that keeps the first. data must be valid JSON.
func UniqueKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	// One set of seen keys per open object; nil for an open array.
	var stack []map[string]bool
	expectKey := func() bool { return len(stack) > 0 && stack[len(stack)-1] != nil }
	afterKey := false // the last token was a key; its value comes next
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, map[string]bool{})
			case '[':
				stack = append(stack, nil)
			default:
				stack = stack[:len(stack)-1]
			}
			afterKey = false
			continue
		case string:
			if expectKey() && !afterKey {
				seen := stack[len(stack)-1]
				if seen[t] {
					return fmt.Errorf("key %q appears twice", t)
				}
				seen[t] = true
				afterKey = true
				continue
			}
		}
		afterKey = false
	}
}

// DecodeJSON decodes a JSON value of a model file's metadata (the model
// table, a vocabulary) into v, strictly: a key given twice, a field v does
// not have, a second value after the first and a lone UTF-16 surrogate
// escape are errors. encoding/json alone would keep the last of two keys,
// skip unknown fields (a misspelt switch silently left at its default) and
// turn "\ud800" into U+FFFD, another token than the file's.
func DecodeJSON(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("missing")
	}
	if err := CheckSurrogates(data); err != nil {
		return err
	}
	if err := UniqueKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// CheckSurrogates refuses a \u escape of a UTF-16 surrogate that is not
// half of a pair: JSON text can spell it, and encoding/json decodes it to
// U+FFFD without a word. data is JSON text (a backslash only ever starts
// an escape inside a string).
func CheckSurrogates(data []byte) error {
	hex4 := func(at int) (rune, bool) {
		if at+6 > len(data) || data[at] != '\\' || data[at+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(data[at+2:at+6]), 16, 32)
		return rune(n), err == nil
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		switch {
		case !ok:
			i++ // a two-byte escape such as \\ or \"
			continue
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
				i += 11
				continue
			}
			return fmt.Errorf("the escape \\u%04x at byte %d is half a UTF-16 surrogate pair, not a character", r, i)
		case r >= 0xDC00 && r < 0xE000:
			return fmt.Errorf("the escape \\u%04x at byte %d is half a UTF-16 surrogate pair, not a character", r, i)
		}
		i += 5
	}
	return nil
}
