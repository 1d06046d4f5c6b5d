package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How Strip treats each OSIS element it meets in a verse.
const (
	inline = iota // the tags go, the text stays, nothing in between: <w>God</w>’s
	gap           // the tags go and leave a word break: <l>…</l><l>…</l> are two lines
	drop          // the element goes whole, content included, and leaves a word break
)

// elements lists the OSIS elements of the two modules (mod2imp's output of
// engWEB2015eb and spaRV1909eb) that are not gaps. Any element not listed
// is a gap, which can only add a space where the text has none.
var elements = map[string]int{
	"w": inline, "transChange": inline, "q": inline, "seg": inline, "name": inline,
	"hi": inline, "foreign": inline, "divineName": inline, "reference": inline,
	// Footnotes (with their references and alternate readings), section
	// headings, the Song of Solomon's speaker labels and catch words are
	// the editors', not the verse's.
	"note": drop, "title": drop, "speaker": drop, "catchWord": drop,
}

// Stripper turns OSIS-marked verses into plain text.
type Stripper struct {
	// Join decides a seam: two marked-up words side by side with no space
	// between them (Spanish "sáca</w><transChange>lo" is one word, "estos
	// </w><transChange>fueron" two). It gets the letters before and after
	// the seam; nil keeps every seam a space.
	Join func(before, after string) bool
}

// Marks Strip leaves in the text until spaces resolves them.
const (
	markGap  = '\x00' // a structural tag: a word break
	markSeam = '\x01' // an inline element's end tag right before another's start tag
	markDrop = '\x02' // a dropped element: a word break, unless punctuation follows
)

// Strip turns one verse of OSIS-marked text into plain text. Footnotes,
// non-canonical titles and speaker labels are dropped with their content;
// a canonical title (a psalm's superscription, which the Spanish text has
// as plain words of verse 1) is kept. Where a dropped element or a
// structural tag (line, line group, paragraph) stood between two words, a
// space is kept, so "God</w><note>…</note><w>created" reads "God created"
// and not "Godcreated"; none is added before closing punctuation or after
// opening punctuation.
func (st Stripper) Strip(s string) (string, error) {
	if strings.ContainsAny(s, "\x00\x01\x02") {
		return "", fmt.Errorf("a control character in the text")
	}
	var b strings.Builder
	kept := 0       // canonical titles open, whose end tags are inline too
	inlineEnd := -1 // b.Len() just after an inline end tag, to spot seams
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			t, err := parseTag(s[i:])
			if err != nil {
				return "", err
			}
			i += t.length
			kind, listed := elements[t.name]
			if !listed {
				kind = gap
			}
			if t.name == "title" && !t.selfClosing {
				switch {
				case !t.end && t.attr("canonical") == "true":
					kept++
					kind = inline
				case t.end && kept > 0:
					kept--
					kind = inline
				}
			}
			switch {
			case kind == drop && !t.end && !t.selfClosing:
				n, err := skipElement(s[i:], t.name)
				if err != nil {
					return "", err
				}
				i += n
				b.WriteByte(markDrop)
			case kind == drop && t.end:
				return "", fmt.Errorf("</%s> without its start tag", t.name)
			case kind == gap:
				b.WriteByte(markGap)
			case t.end:
				inlineEnd = b.Len()
				continue
			case !t.selfClosing && inlineEnd == b.Len():
				b.WriteByte(markSeam)
			}
		case '&':
			r, n, err := entity(s[i:])
			if err != nil {
				return "", err
			}
			b.WriteString(r)
			i += n
		case '>':
			return "", fmt.Errorf("a '>' outside a tag")
		default:
			b.WriteByte(s[i])
			i++
		}
		inlineEnd = -1
	}
	return st.spaces(b.String()), nil
}

const (
	closers = ",.;:!?)]}’”»…"
	openers = "([{“‘«¿¡"
)

// spaces resolves the marks: every run of white space and marks becomes
// one space or none. None at either end of the verse; none where the run
// holds no white space and sits before closing punctuation or after
// opening punctuation; none where it holds a dropped element and closing
// punctuation follows ("coins <note>…</note> ?" reads "coins?"); a seam
// alone between two letters is what Join says.
func (st Stripper) spaces(s string) string {
	rs := []rune(s)
	var b strings.Builder
	isMark := func(r rune) bool {
		return r == markGap || r == markSeam || r == markDrop || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0'
	}
	for i := 0; i < len(rs); {
		if !isMark(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		var white, seamOnly, dropped = false, true, false
		for ; j < len(rs) && isMark(rs[j]); j++ {
			white = white || rs[j] == ' ' || rs[j] == '\t' || rs[j] == '\n' || rs[j] == '\r' || rs[j] == '\u00a0'
			seamOnly = seamOnly && rs[j] == markSeam
			dropped = dropped || rs[j] == markDrop
		}
		space := true
		switch {
		case i == 0 || j == len(rs):
			space = false
		case dropped && strings.ContainsRune(closers, rs[j]):
			space = false
		case white:
		case strings.ContainsRune(closers, rs[j]) || strings.ContainsRune(openers, rs[i-1]):
			space = false
		case seamOnly && isWordRune(rs[i-1]) && isWordRune(rs[j]) && st.Join != nil:
			space = !st.Join(wordBefore(rs, i), wordAfter(rs, j))
		}
		if space {
			b.WriteByte(' ')
		}
		i = j
	}
	return b.String()
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

// wordBefore is the run of letters that ends at rs[i-1]; wordAfter the run
// that starts at rs[j].
func wordBefore(rs []rune, i int) string {
	k := i
	for k > 0 && isWordRune(rs[k-1]) {
		k--
	}
	return string(rs[k:i])
}

func wordAfter(rs []rune, j int) string {
	k := j
	for k < len(rs) && isWordRune(rs[k]) {
		k++
	}
	return string(rs[j:k])
}

// tag is one parsed start, end or empty-element tag.
type tag struct {
	name             string
	end, selfClosing bool
	attrs            string // the raw attribute text
	length           int    // bytes from '<' to '>' inclusive
}

func (t tag) attr(name string) string {
	_, rest, ok := strings.Cut(" "+t.attrs, " "+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// parseTag reads the tag at the start of s (s[0] == '<'). Attribute values
// may hold '>' only inside quotes.
func parseTag(s string) (tag, error) {
	inQuote := false
	end := -1
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			inQuote = !inQuote
		case '<':
			if !inQuote {
				return tag{}, fmt.Errorf("a '<' inside the tag %q", clip(s[:i]))
			}
		case '>':
			if !inQuote {
				end = i
			}
		}
		if end >= 0 {
			break
		}
	}
	if end < 0 {
		return tag{}, fmt.Errorf("an unterminated tag %q", clip(s))
	}
	t := tag{length: end + 1}
	body := s[1:end]
	if strings.HasPrefix(body, "/") {
		t.end, body = true, body[1:]
	}
	if strings.HasSuffix(body, "/") {
		t.selfClosing, body = true, body[:len(body)-1]
	}
	t.name, t.attrs, _ = strings.Cut(strings.TrimSpace(body), " ")
	if t.name == "" || strings.ContainsAny(t.name, "\"=&") {
		return tag{}, fmt.Errorf("a malformed tag %q", clip(s[:end+1]))
	}
	return t, nil
}

// skipElement returns the bytes up to and including the end tag that
// closes an element named name whose start tag precedes s, counting
// nested elements of the same name.
func skipElement(s, name string) (int, error) {
	depth := 1
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			break
		}
		i += j
		t, err := parseTag(s[i:])
		if err != nil {
			return 0, err
		}
		i += t.length
		if t.name == name && !t.selfClosing {
			if t.end {
				depth--
			} else {
				depth++
			}
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("<%s> is never closed", name)
}

// entity decodes the character reference at the start of s.
func entity(s string) (string, int, error) {
	end := strings.IndexByte(s, ';')
	if end < 0 || end > 10 {
		return "", 0, fmt.Errorf("a bare '&' in %q", clip(s))
	}
	switch name := s[1:end]; name {
	case "amp":
		return "&", end + 1, nil
	case "lt":
		return "<", end + 1, nil
	case "gt":
		return ">", end + 1, nil
	case "quot":
		return `"`, end + 1, nil
	case "apos":
		return "'", end + 1, nil
	default:
		var r rune
		if _, err := fmt.Sscanf(name, "#x%x", &r); err == nil && utf8.ValidRune(r) {
			return string(r), end + 1, nil
		}
		if _, err := fmt.Sscanf(name, "#%d", &r); err == nil && utf8.ValidRune(r) {
			return string(r), end + 1, nil
		}
		return "", 0, fmt.Errorf("an unknown entity &%s;", name)
	}
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
