// Command rooms measures the size of gptg's rooms for docs/architecture.md:
// the functions longer than -max lines, the biggest files, and the pairs of
// files of one package that call each other both ways (a call path that
// goes into a file and comes back out of it, as a run's config would
// re-enter a file it already passed). Test files are left out.
//
//	go run ./bench/rooms ./train ./cmd/gptg
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
}

func main() {
	maxLines := flag.Int("max", 80, "report functions longer than this many lines")
	files := flag.Int("files", 5, "report this many of each package's longest files")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	if err := run(pkgs, *maxLines, *files); err != nil {
		fmt.Fprintln(os.Stderr, "rooms:", err)
		os.Exit(1)
	}
}

func goList(args ...string) ([]listed, error) {
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var ps []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func run(patterns []string, maxLines, nfiles int) error {
	targets, err := goList(patterns...)
	if err != nil {
		return err
	}
	deps, err := goList(append([]string{"-export", "-deps"}, patterns...)...)
	if err != nil {
		return err
	}
	exports := map[string]string{}
	for _, d := range deps {
		exports[d.ImportPath] = d.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	for _, p := range targets {
		if err := measure(fset, imp, p, maxLines, nfiles); err != nil {
			return fmt.Errorf("%s: %w", p.ImportPath, err)
		}
	}
	return nil
}

type fn struct {
	name  string
	file  string
	lines int
}

// pkgFiles is one package's files, parsed and type-checked.
type pkgFiles struct {
	path  string
	files []*ast.File
	sizes map[string]int // lines per file name
	info  *types.Info
}

func measure(fset *token.FileSet, imp types.Importer, p listed, maxLines, nfiles int) error {
	pf, err := load(fset, imp, p)
	if err != nil {
		return err
	}
	printSizes(pf, nfiles)
	long := longFuncs(fset, pf.files, maxLines)
	fmt.Printf("  %d functions over %d lines\n", len(long), maxLines)
	for _, f := range long {
		fmt.Printf("  func %-40s %4d lines  %s\n", f.name, f.lines, f.file)
	}
	both := bothWays(fileCalls(fset, pf))
	fmt.Printf("  %d pairs of files calling each other both ways\n", len(both))
	for _, s := range both {
		fmt.Printf("  %s\n", s)
	}
	return nil
}

// load parses and type-checks the package's files, tests left out.
func load(fset *token.FileSet, imp types.Importer, p listed) (*pkgFiles, error) {
	pf := &pkgFiles{path: p.ImportPath, sizes: map[string]int{}, info: &types.Info{Uses: map[*ast.Ident]types.Object{}}}
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		pf.files = append(pf.files, f)
		pf.sizes[name] = fset.Position(f.End()).Line
	}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(p.ImportPath, fset, pf.files, pf.info); err != nil {
		return nil, err
	}
	return pf, nil
}

// printSizes prints the package's size and its nfiles longest files.
func printSizes(pf *pkgFiles, nfiles int) {
	total := 0
	names := make([]string, 0, len(pf.sizes))
	for name, n := range pf.sizes {
		names = append(names, name)
		total += n
	}
	fmt.Printf("%s: %d files, %d lines (tests left out)\n", pf.path, len(pf.files), total)
	sort.Slice(names, func(i, j int) bool {
		if pf.sizes[names[i]] != pf.sizes[names[j]] {
			return pf.sizes[names[i]] > pf.sizes[names[j]]
		}
		return names[i] < names[j]
	})
	for _, name := range names[:min(nfiles, len(names))] {
		fmt.Printf("  file %-28s %5d lines\n", name, pf.sizes[name])
	}
}

// longFuncs are the functions of more than maxLines lines, longest first.
func longFuncs(fset *token.FileSet, files []*ast.File, maxLines int) []fn {
	var long []fn
	for _, f := range files {
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxLines {
				name := fd.Name.Name
				if fd.Recv != nil && len(fd.Recv.List) > 0 {
					name = "(" + types.ExprString(fd.Recv.List[0].Type) + ")." + name
				}
				long = append(long, fn{name, file, n})
			}
		}
	}
	sort.Slice(long, func(i, j int) bool {
		if long[i].lines != long[j].lines {
			return long[i].lines > long[j].lines
		}
		return long[i].name < long[j].name
	})
	return long
}

// fileCalls maps each pair of files (from, to) to the names of to's
// functions and methods that from calls.
func fileCalls(fset *token.FileSet, pf *pkgFiles) map[[2]string]map[string]int {
	calls := map[[2]string]map[string]int{}
	for _, f := range pf.files {
		from := filepath.Base(fset.Position(f.Pos()).Filename)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var id *ast.Ident
			switch e := call.Fun.(type) {
			case *ast.Ident:
				id = e
			case *ast.SelectorExpr:
				id = e.Sel
			}
			if id == nil {
				return true
			}
			obj, ok := pf.info.Uses[id].(*types.Func)
			if !ok || obj.Pkg() == nil || obj.Pkg().Path() != pf.path {
				return true
			}
			if to := filepath.Base(fset.Position(obj.Pos()).Filename); to != from {
				k := [2]string{from, to}
				if calls[k] == nil {
					calls[k] = map[string]int{}
				}
				calls[k][obj.Name()]++
			}
			return true
		})
	}
	return calls
}

// bothWays describes each pair of files that call each other.
func bothWays(calls map[[2]string]map[string]int) []string {
	var both []string
	for k, there := range calls {
		a, b := k[0], k[1]
		back, ok := calls[[2]string{b, a}]
		if a < b && ok {
			both = append(both, fmt.Sprintf("%s ⇄ %s (%d calls: %s; %d calls: %s)", a, b,
				count(there), nameList(there), count(back), nameList(back)))
		}
	}
	sort.Strings(both)
	return both
}

// count is the number of calls in a set of callees.
func count(set map[string]int) int {
	n := 0
	for _, c := range set {
		n += c
	}
	return n
}

// nameList lists a set's names in order.
func nameList(set map[string]int) string {
	var s []string
	for n := range set {
		s = append(s, n)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
