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

func measure(fset *token.FileSet, imp types.Importer, p listed, maxLines, nfiles int) error {
	var files []*ast.File
	sizes := map[string]int{}
	total := 0
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, f)
		n := fset.Position(f.End()).Line
		sizes[name] = n
		total += n
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
		return err
	}
	var long []fn
	// calls[a][b]: calls from file a to a function or method declared in file b.
	calls := map[string]map[string]int{}
	callees := map[[2]string]map[string]bool{}
	for _, f := range files {
		from := filepath.Base(fset.Position(f.Pos()).Filename)
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
				long = append(long, fn{name, from, n})
			}
		}
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
			obj, ok := info.Uses[id].(*types.Func)
			if !ok || obj.Pkg() == nil || obj.Pkg().Path() != p.ImportPath {
				return true
			}
			to := filepath.Base(fset.Position(obj.Pos()).Filename)
			if to != from {
				if calls[from] == nil {
					calls[from] = map[string]int{}
				}
				calls[from][to]++
				if callees[[2]string{from, to}] == nil {
					callees[[2]string{from, to}] = map[string]bool{}
				}
				callees[[2]string{from, to}][obj.Name()] = true
			}
			return true
		})
	}
	fmt.Printf("%s: %d files, %d lines (tests left out)\n", p.ImportPath, len(files), total)
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return sizes[names[i]] > sizes[names[j]] })
	for _, name := range names[:min(nfiles, len(names))] {
		fmt.Printf("  file %-28s %5d lines\n", name, sizes[name])
	}
	sort.Slice(long, func(i, j int) bool { return long[i].lines > long[j].lines })
	fmt.Printf("  %d functions over %d lines\n", len(long), maxLines)
	for _, f := range long {
		fmt.Printf("  func %-40s %4d lines  %s\n", f.name, f.lines, f.file)
	}
	var both []string
	for a, tos := range calls {
		for b, n := range tos {
			if a < b && calls[b][a] > 0 {
				both = append(both, fmt.Sprintf("%s ⇄ %s (%d calls: %s; %d calls: %s)", a, b,
					n, nameList(callees[[2]string{a, b}]), calls[b][a], nameList(callees[[2]string{b, a}])))
			}
		}
	}
	sort.Strings(both)
	fmt.Printf("  %d pairs of files calling each other both ways\n", len(both))
	for _, s := range both {
		fmt.Printf("  %s\n", s)
	}
	return nil
}

// nameList lists a set's names in order.
func nameList(set map[string]bool) string {
	var s []string
	for n := range set {
		s = append(s, n)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
