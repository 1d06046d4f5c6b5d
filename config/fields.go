package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// field is one settable key such as "model.heads". The list of fields is
// built from the struct tags in types.go, so adding a field there is enough
// for Load, the strict key check, TOML and Diff to know about it.
type field struct {
	section string       // "model"
	key     string       // "heads"
	index   [2]int       // Config.<section> field index, then <Section>.<key> field index
	kind    reflect.Kind // String, Bool, Int, Int64 or Float64
}

// name is the dotted form used in errors and --set: "model.heads".
func (f field) name() string { return f.section + "." + f.key }

// value returns the addressable struct field in c that f describes.
func (f field) value(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().Field(f.index[0]).Field(f.index[1])
}

// schema lists the tables and their keys in the order types.go declares them,
// which is also the order used in "allowed:" lists and in TOML output.
type schema struct {
	sections []string            // "data", "model", "train", "sample"
	fields   []field             // every key of every section
	byName   map[string]field    // "model.heads" -> field
	keys     map[string][]string // "model" -> ["vocab", "context", ...]
}

var getSchema = sync.OnceValue(buildSchema)

func buildSchema() *schema {
	s := &schema{byName: map[string]field{}, keys: map[string][]string{}}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		sf := ct.Field(i)
		section := tomlName(sf)
		if section == "" || sf.Type.Kind() != reflect.Struct {
			continue // Path and Name are not part of the file
		}
		s.sections = append(s.sections, section)
		for j := range sf.Type.NumField() {
			kf := sf.Type.Field(j)
			key := tomlName(kf)
			if key == "" {
				continue
			}
			f := field{section: section, key: key, index: [2]int{i, j}, kind: kf.Type.Kind()}
			switch f.kind {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
			default:
				// A programming error in types.go, not a user error.
				panic(fmt.Sprintf("config: %s has unsupported type %s", f.name(), kf.Type))
			}
			s.fields = append(s.fields, f)
			s.byName[f.name()] = f
			s.keys[section] = append(s.keys[section], key)
		}
	}
	return s
}

// tomlName is the key a struct field has in the file, or "" if it has none.
func tomlName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
	if name == "-" || !sf.IsExported() {
		return ""
	}
	return name
}

func (s *schema) isSection(name string) bool {
	_, ok := s.keys[name]
	return ok
}

// Keys returns every setting's "section.key", as --set and configs write it.
func Keys() []string { return getSchema().allSettable() }

// allSettable returns every "section.key", for suggestions on --set.
func (s *schema) allSettable() []string {
	names := make([]string, len(s.fields))
	for i, f := range s.fields {
		names[i] = f.name()
	}
	return names
}

// convert checks that a decoded TOML value fits f and returns it as the Go
// type f.set expects. Integers are accepted for float keys because people
// write lr = 1 or epochs = 3 and mean a number, not a type.
func (f field) convert(v any) (any, error) {
	switch f.kind {
	case reflect.String:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("expected a string, got %s", describe(v))
	case reflect.Bool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("expected a boolean (true or false), got %s", describe(v))
	case reflect.Int, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("expected an integer, got %s", describe(v))
		}
		if f.kind == reflect.Int && (n < math.MinInt || n > math.MaxInt) {
			return nil, fmt.Errorf("%d does not fit in an int", n)
		}
		return n, nil
	case reflect.Float64:
		var x float64
		switch n := v.(type) {
		case float64:
			x = n
		case int64:
			x = float64(n)
		default:
			return nil, fmt.Errorf("expected a number, got %s", describe(v))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not allowed (must be a finite number)", x)
		}
		return x, nil
	}
	return nil, fmt.Errorf("unsupported key type %s", f.kind) // unreachable: buildSchema checks kinds
}

// set stores a value returned by convert into c.
func (f field) set(c *Config, v any) {
	rv := f.value(c)
	switch x := v.(type) {
	case string:
		rv.SetString(x)
	case bool:
		rv.SetBool(x)
	case int64:
		rv.SetInt(x)
	case float64:
		rv.SetFloat(x)
	}
}

// format renders f's value in c the way a person would type it after
// --set: strings bare when that is unambiguous, quoted otherwise.
func (f field) format(c *Config) string {
	rv := f.value(c)
	switch f.kind {
	case reflect.String:
		s := rv.String()
		if s == "" || strings.ContainsAny(s, " \t\r\n\"'#=\\") {
			return tomlQuote(s)
		}
		return s
	case reflect.Float64:
		return formatFloat(rv.Float())
	default:
		return fmt.Sprint(rv.Interface())
	}
}

// tomlQuote quotes s as a TOML string, so that --set reads it back exactly
// (Go's %q uses escapes such as \x01 that TOML does not have).
func tomlQuote(s string) string {
	b, err := toml.Marshal(map[string]string{"v": s})
	if err != nil {
		return fmt.Sprintf("%q", s) // cannot happen for a string
	}
	return strings.TrimSpace(strings.TrimPrefix(string(b), "v = "))
}

func formatFloat(x float64) string {
	return fmt.Sprintf("%g", x)
}

// describe names a TOML value's type and, for scalars, the value itself, for
// "expected X, got Y" messages. Long strings are shortened so the error stays
// on one readable line.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:37] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return "float " + formatFloat(x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	case time.Time:
		return "a date/time"
	}
	return fmt.Sprintf("a %T", v)
}

// Suggest returns the candidate closest to word, or "" when none is close
// enough to be a plausible typo. Short words get a smaller budget so that
// "lr" does not "correct" to an unrelated two-letter key. The CLI uses it
// for misspelt flags and commands, as the config does for keys.
func Suggest(word string, candidates []string) string {
	limit := 2
	if len([]rune(word)) <= 3 {
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(word), strings.ToLower(c))
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// levenshtein is the edit distance (insertions, deletions, substitutions).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// sortedKeys returns m's keys in the order they appear in the file (per
// md.Keys), so that the first error reported is the first one in the file.
// Keys the metadata does not know about (should not happen) go last, sorted.
func sortedKeys(m map[string]any, md toml.MetaData, prefix ...string) []string {
	pos := map[string]int{}
	for i, k := range md.Keys() {
		if len(k) == len(prefix)+1 && slices.Equal(k[:len(prefix)], prefix) {
			if _, seen := pos[k[len(prefix)]]; !seen {
				pos[k[len(prefix)]] = i
			}
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		pi, iok := pos[keys[i]]
		pj, jok := pos[keys[j]]
		switch {
		case iok && jok:
			return pi < pj
		case iok != jok:
			return iok
		}
		return keys[i] < keys[j]
	})
	return keys
}
