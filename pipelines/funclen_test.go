package pipelines

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function in pipelines/** may be
// (from its "func" line to its closing brace): a reader can hold it in
// their head. A longer one is split into named steps.
const maxFuncLines = 100

// longFuncAllowed lists functions over maxFuncLines tolerated for a while,
// as "dir/file.go:Func". Each entry is a debt to pay, not a licence: remove
// it when the function is split. An entry that no longer names a long
// function fails the test, so the list cannot rot. It is empty: every
// function in pipelines/** is within the limit.
var longFuncAllowed = map[string]bool{}

// longFuncs walks root and returns every non-test function or method longer
// than limit lines, as "dir/file.go:Func" relative to root, with its length.
func longFuncs(root string, limit int) (map[string]int, error) {
	out := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > limit {
				out[filepath.ToSlash(rel)+":"+fd.Name.Name] = n
			}
		}
		return nil
	})
	return out, err
}

// funcLenRoots are the trees TestFunctionLength measures: pipelines/**
// and the composition root that wires them.
var funcLenRoots = []string{".", "../engine"}

// TestFunctionLength fails on any non-test function in funcLenRoots over
// maxFuncLines lines that is not on the allow-list, and on any allow-list
// entry that is no longer long.
func TestFunctionLength(t *testing.T) {
	long := map[string]int{}
	for _, root := range funcLenRoots {
		l, err := longFuncs(root, maxFuncLines)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(long, l)
	}
	var bad []string
	for name, n := range long {
		if !longFuncAllowed[name] {
			bad = append(bad, fmt.Sprintf("%s is %d lines (at most %d: split it into named steps)", name, n, maxFuncLines))
		}
	}
	for name := range longFuncAllowed {
		if _, ok := long[name]; !ok {
			bad = append(bad, fmt.Sprintf("%s is on the allow-list but not over %d lines: remove the entry", name, maxFuncLines))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestLongFuncs: the walker measures from the func line to the closing
// brace, skips test files, and names methods by their method name.
func TestLongFuncs(t *testing.T) {
	dir := t.TempDir()
	body := func(n int) string { return strings.Repeat("\t_ = 0\n", n) }
	files := map[string]string{
		"a/a.go":      "package a\n\nfunc short() {\n" + body(98) + "}\n\nfunc long() {\n" + body(99) + "}\n",
		"a/a_test.go": "package a\n\nfunc longTest() {\n" + body(200) + "}\n",
		"b/b.go":      "package b\n\ntype T struct{}\n\nfunc (T) M() {\n" + body(150) + "}\n",
	}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := longFuncs(dir, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a/a.go:long": 101, "b/b.go:M": 152}
	if len(got) != len(want) {
		t.Fatalf("long functions %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d lines, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
