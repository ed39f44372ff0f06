package pipelines

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layout rule of the pipelines tree: a model package (one pipeline of
// the interface spec, a thin adapter) imports no other model package, and
// a capability package (a reusable algorithm) imports no model package.
// The registry (pipelines/all) is the one package that imports every
// model package.

const (
	// modulePrefix is the import path of this directory.
	modulePrefix = "fashiond/pipelines"
	// registryPkg may import every model package.
	registryPkg = modulePrefix + "/all"
)

// modelPackages are the model pipelines of the spec, as import paths.
var modelPackages = []string{
	modulePrefix + "/anglegeneration",
	modulePrefix + "/imagetovideo",
	modulePrefix + "/modelcreate",
	modulePrefix + "/posecontrol",
	modulePrefix + "/producttomodel",
	modulePrefix + "/prompttryon",
	modulePrefix + "/tryon",
}

// pkgInfo is what the layout rule needs of one package.
type pkgInfo struct {
	imports []string // import paths of its files, tests included
	model   bool     // declares a Pipeline type with a Run method
}

// layoutViolations lists every import that breaks the layout rule, as
// "importer imports imported (why)", sorted. models names the model
// packages.
func layoutViolations(pkgs map[string]pkgInfo, models []string) []string {
	var out []string
	for path, p := range pkgs {
		if path == registryPkg {
			continue
		}
		isModel := slices.Contains(models, path)
		for _, imp := range p.imports {
			if imp == path || !slices.Contains(models, imp) {
				continue
			}
			why := "a capability package imports a model package"
			if isModel {
				why = "a model package imports another model package"
			}
			out = append(out, path+" imports "+imp+" ("+why+")")
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// scanPackages parses the imports of every Go file below root (this
// directory) and whether each package declares a pipeline (a Run method
// on a type named Pipeline).
func scanPackages(t *testing.T, root string) map[string]pkgInfo {
	t.Helper()
	pkgs := map[string]pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		path := filepath.ToSlash(filepath.Join(modulePrefix, filepath.Dir(p)))
		info := pkgs[path]
		for _, s := range f.Imports {
			imp, _ := strconv.Unquote(s.Path.Value)
			info.imports = append(info.imports, imp)
		}
		if !strings.HasSuffix(p, "_test.go") && declaresPipeline(t, p) {
			info.model = true
		}
		pkgs[path] = info
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// declaresPipeline says whether the file declares func (*Pipeline) Run.
func declaresPipeline(t *testing.T, file string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Name.Name != "Run" || len(fn.Recv.List) != 1 {
			continue
		}
		typ := fn.Recv.List[0].Type
		if st, ok := typ.(*ast.StarExpr); ok {
			typ = st.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.Name == "Pipeline" {
			return true
		}
	}
	return false
}

// TestLayout checks the layout rule on this tree, and that modelPackages
// is exactly the set of packages that declare a pipeline.
func TestLayout(t *testing.T) {
	pkgs := scanPackages(t, ".")
	var declared []string
	for path, p := range pkgs {
		if p.model {
			declared = append(declared, path)
		}
	}
	slices.Sort(declared)
	if !slices.Equal(declared, modelPackages) {
		t.Errorf("packages declaring a pipeline %v, want the model packages %v", declared, modelPackages)
	}
	for _, v := range layoutViolations(pkgs, modelPackages) {
		t.Error(v)
	}
}

// TestLayoutViolations checks the rule itself on small import graphs.
func TestLayoutViolations(t *testing.T) {
	const (
		a, b   = modulePrefix + "/a", modulePrefix + "/b"
		capPkg = modulePrefix + "/cap"
	)
	models := []string{a, b}
	tests := []struct {
		name string
		pkgs map[string]pkgInfo
		want []string
	}{
		{"clean", map[string]pkgInfo{a: {imports: []string{capPkg, "image"}}, b: {imports: []string{capPkg}}, capPkg: {}}, nil},
		{"model imports model", map[string]pkgInfo{a: {imports: []string{b}}, b: {}},
			[]string{a + " imports " + b + " (a model package imports another model package)"}},
		{"capability imports model", map[string]pkgInfo{capPkg: {imports: []string{a, "fmt"}}},
			[]string{capPkg + " imports " + a + " (a capability package imports a model package)"}},
		{"registry may import all", map[string]pkgInfo{registryPkg: {imports: []string{a, b}}}, nil},
		{"external test of a model imports itself", map[string]pkgInfo{a: {imports: []string{a}}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := layoutViolations(tc.pkgs, models); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
