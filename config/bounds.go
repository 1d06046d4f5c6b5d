package config

import "fmt"

// Bounds on a config file, checked before the TOML parser sees it. The
// parser's memory grows much faster than its input on some shapes (a
// 200 KB header of 100,000 dotted parts took 8 GB), and no real config
// comes near these: the seed's, every setting written out, is 5 KB.
const (
	MaxConfigSize = 1 << 20 // bytes of one file
	maxNesting    = 8       // brackets and braces open at once
	maxKeyParts   = 8       // dots in one dotted key
	maxLineLength = 64 << 10
)

// checkBounds refuses a config text beyond the bounds above, naming the
// line. It scans the way TOML tokenizes just enough to skip strings and
// comments, where brackets and dots are text.
func checkBounds(path string, text []byte) error {
	if len(text) > MaxConfigSize {
		return &Error{File: path, Msg: fmt.Sprintf("file is %d bytes, more than the limit of %d for a config", len(text), MaxConfigSize)}
	}
	line, lineStart := 1, 0
	depth, dots := 0, 0
	fail := func(format string, args ...any) error {
		return &Error{File: path, Msg: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			line, lineStart = line+1, i+1
			dots = 0
			continue
		case c == '#':
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			end, newlines, ok := skipString(text, i)
			if !ok {
				return nil // unterminated: the parser says so, with its own message
			}
			i, line = end, line+newlines
			if newlines > 0 {
				lineStart = i // long multi-line strings are text, not one line
			}
		case c == '[' || c == '{':
			depth++
			if depth > maxNesting {
				return fail("more than %d nested tables or arrays (a config needs two)", maxNesting)
			}
		case c == ']' || c == '}':
			depth = max(0, depth-1)
		case c == '.':
			dots++
			if dots > maxKeyParts {
				return fail("a key of more than %d dotted parts (a config's keys have two)", maxKeyParts)
			}
		case c == '=' || c == ',':
			dots = 0 // a value's dots (1.5) do not add to the next key's
		}
		if i-lineStart > maxLineLength {
			return fail("longer than %d characters", maxLineLength)
		}
	}
	return nil
}

// skipString returns the index of the closing quote of the string that
// opens at text[start], and the newlines inside it. Multi-line strings
// ("""…""", ”'…”') and backslash escapes in basic strings are followed.
func skipString(text []byte, start int) (end, newlines int, ok bool) {
	q := text[start]
	triple := start+2 < len(text) && text[start+1] == q && text[start+2] == q
	i := start + 1
	if triple {
		i = start + 3
	}
	for ; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\\' && q == '"':
			i++
			if i < len(text) && text[i] == '\n' {
				newlines++
			}
		case c == '\n':
			if !triple {
				return 0, 0, false
			}
			newlines++
		case c == q && !triple:
			return i, newlines, true
		case c == q && i+2 < len(text) && text[i+1] == q && text[i+2] == q:
			// Up to two more quotes may end the string's content: """a""""".
			for i+3 < len(text) && text[i+3] == q {
				i++
			}
			return i + 2, newlines, true
		}
	}
	return 0, 0, false
}
