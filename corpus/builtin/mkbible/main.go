// Command mkbible makes the built-in translation corpus,
// corpus/builtin/bible-en-es.tsv, from two SWORD Bible modules dumped by
// mod2imp (Debian's libsword-utils): English (World English Bible,
// engWEB2015eb, package sword-text-web) and Spanish (Reina-Valera 1909,
// spaRV1909eb, package sword-text-sparv), both public domain. It is run by
// corpus/builtin/mkbible.sh; see docs/translation.md.
//
// A dump is a sequence of entries: a "$$$Book C:V" key line, then the
// verse's OSIS-marked text. Verses present in both dumps, non-empty once
// stripped (Strip) and of at most -max-words English words (pairs.Tokenize's
// words, punctuation included) are written in the English dump's order as
// "English<tab>Spanish<tab>Book C:V" lines.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gptg/gptg/pairs"
)

func main() {
	en := flag.String("en", "", "mod2imp dump of the source (English) module")
	es := flag.String("es", "", "mod2imp dump of the target (Spanish) module")
	maxWords := flag.Int("max-words", 32, "keep verses of at most this many English words (pairs.Tokenize)")
	out := flag.String("out", "", "the TSV to write")
	flag.Parse()
	if *en == "" || *es == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mkbible -en EN.imp -es ES.imp -out FILE.tsv [-max-words N]")
		os.Exit(2)
	}
	if err := run(*en, *es, *out, *maxWords, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mkbible:", err)
		os.Exit(1)
	}
}

func run(enPath, esPath, out string, maxWords int, log io.Writer) error {
	enKeys, enText, err := readDump(enPath)
	if err != nil {
		return err
	}
	_, esText, err := readDump(esPath)
	if err != nil {
		return err
	}
	lex, err := lexicon(esText)
	if err != nil {
		return fmt.Errorf("%s: %v", esPath, err)
	}
	en, es := Stripper{}, Stripper{Join: spanishJoin(lex)}
	var both, empty, long int
	var rows []string
	for _, key := range enKeys {
		esRaw, ok := esText[key]
		if !ok {
			continue
		}
		both++
		e, err := en.Strip(enText[key])
		if err != nil {
			return fmt.Errorf("%s: %s: %v", enPath, key, err)
		}
		s, err := es.Strip(esRaw)
		if err != nil {
			return fmt.Errorf("%s: %s: %v", esPath, key, err)
		}
		switch {
		case e == "" || s == "":
			empty++
		case len(pairs.Tokenize(e)) > maxWords:
			long++
		default:
			rows = append(rows, e+"\t"+s+"\t"+key+"\n")
		}
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(rows, "")), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return err
	}
	fmt.Fprintf(log, "%d verses in both modules; %d empty once stripped, %d of more than %d English words; wrote %d pairs to %s\n",
		both, empty, long, maxWords, len(rows), out)
	return nil
}

// lexicon is the set of (lower-case) words of a dump, every seam read as
// a space.
func lexicon(text map[string]string) (map[string]bool, error) {
	lex := map[string]bool{}
	for key, t := range text {
		plain, err := Stripper{}.Strip(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		for _, w := range pairs.Tokenize(plain) {
			lex[w] = true
		}
	}
	return lex, nil
}

// spanishJoin decides the Reina-Valera's seams. The module marks words the
// translators added (<transChange type="added">) and sometimes leaves no
// space before or after them; mostly that is a lost space ("estos
// fueron"), but an added object pronoun hangs on its verb ("sáca" + "lo"
// is "sácalo", "Júrame" + "lo" "Júramelo"). A seam is one word when the
// second part is such a pronoun and the whole is a word found elsewhere
// in the text, or the first part looks like a verb that takes one: an
// infinitive (-r), a plural imperative (-d), or a written accent that
// only the pronoun explains.
func spanishJoin(lex map[string]bool) func(a, b string) bool {
	enclitic := map[string]bool{"lo": true, "la": true, "los": true, "las": true, "le": true, "les": true,
		"me": true, "te": true, "se": true, "nos": true, "os": true}
	return func(a, b string) bool {
		a, b = strings.ToLower(a), strings.ToLower(b)
		if !enclitic[b] {
			return false
		}
		if lex[a+b] {
			return true
		}
		return len([]rune(a)) >= 3 && (strings.HasSuffix(a, "r") || strings.HasSuffix(a, "d") || strings.ContainsAny(a, "áéíóú"))
	}
}

// readDump reads a mod2imp dump into its verse keys, in order, and each
// key's marked-up text. Keys that are not verses — module and testament
// headings ("[ Module Heading ]"), book and chapter introductions (C:0 or
// 0:0) — are skipped.
func readDump(path string) ([]string, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var keys []string
	text := map[string]string{}
	key := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if k, ok := strings.CutPrefix(line, "$$$"); ok {
			key = ""
			if isVerse(k) {
				if _, dup := text[k]; dup {
					return nil, nil, fmt.Errorf("%s: verse %s twice", path, k)
				}
				key = k
				keys = append(keys, k)
				text[k] = ""
			}
			continue
		}
		if key != "" {
			text[key] += line + "\n" // a line break is a word break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("%s: no verses (is it a mod2imp dump?)", path)
	}
	return keys, text, nil
}

// isVerse reports whether a key is "Book C:V" with C, V >= 1.
func isVerse(key string) bool {
	i := strings.LastIndexByte(key, ' ')
	if i < 0 {
		return false
	}
	var c, v int
	var rest string
	n, _ := fmt.Sscanf(key[i+1:], "%d:%d%s", &c, &v, &rest)
	return n == 2 && c >= 1 && v >= 1
}
