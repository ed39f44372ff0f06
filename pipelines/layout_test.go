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

// The layout rules of the house (docs/ARCHITECTURE.md), checked on the
// import graph of the whole module, tests included:
//   - a capability (pipelines/capability/<name>, a reusable algorithm)
//     imports no model room;
//   - a model room (pipelines/<api model>, one pipeline of the interface
//     spec) imports no other model room;
//   - only the composition root (engine) imports the model rooms;
//   - only the composition root and the commands (cmd/...) import config:
//     every other room is handed its settings.

const (
	// module is the module path; repoRoot is its directory from here.
	module   = "fashiond"
	repoRoot = ".."
	// modulePrefix is the import path of this directory.
	modulePrefix = module + "/pipelines"
	// capabilityPrefix prefixes every capability's import path.
	capabilityPrefix = modulePrefix + "/capability/"
	// rootPkg is the composition root: it alone imports every model room.
	rootPkg = module + "/engine"
	// configPkg is the configuration, read by the root and the commands.
	configPkg = module + "/config"
	// cmdPrefix prefixes the commands' import paths.
	cmdPrefix = module + "/cmd/"
)

// modelPackages are the model rooms, one per model of the spec, named
// after it, as import paths.
var modelPackages = []string{
	modulePrefix + "/anglegeneration",
	modulePrefix + "/imagetovideo",
	modulePrefix + "/modelcreate",
	modulePrefix + "/posecontrol",
	modulePrefix + "/producttomodel",
	modulePrefix + "/prompttryon",
	modulePrefix + "/tryon",
}

// pkgInfo is what the layout rules need of one package.
type pkgInfo struct {
	imports []string // import paths of its files, tests included
	model   bool     // declares a Pipeline type with a Run method
}

// layoutViolations lists every import that breaks a layout rule, as
// "importer imports imported (why)", sorted. models names the model rooms.
func layoutViolations(pkgs map[string]pkgInfo, models []string) []string {
	var out []string
	for path, p := range pkgs {
		for _, imp := range p.imports {
			if why := importRule(path, imp, models); why != "" {
				out = append(out, path+" imports "+imp+" ("+why+")")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// importRule is the rule that path importing imp breaks, "" for none.
func importRule(path, imp string, models []string) string {
	if imp == path {
		return "" // an external test package imports its own package
	}
	if imp == configPkg && path != rootPkg && !strings.HasPrefix(path, cmdPrefix) {
		return "only the composition root and cmd import config"
	}
	if !slices.Contains(models, imp) {
		return ""
	}
	switch {
	case strings.HasPrefix(path, capabilityPrefix):
		return "a capability imports a model room"
	case slices.Contains(models, path):
		return "a model room imports another model room"
	case path != rootPkg:
		return "only the composition root imports model rooms"
	}
	return ""
}

// scanPackages parses the imports of every Go file of the module (below
// root, the repository) and whether each package declares a pipeline (a
// Run method on a type named Pipeline). Hidden directories, testdata and
// symbolic links (data, .deps) are not walked.
func scanPackages(t *testing.T, root string) map[string]pkgInfo {
	t.Helper()
	pkgs := map[string]pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		path := module
		if rel != "." {
			path += "/" + filepath.ToSlash(rel)
		}
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

// TestLayout checks the layout rules on this module; that modelPackages is
// exactly the set of packages that declare a pipeline; and that every
// package below pipelines/ is a model room or a capability.
func TestLayout(t *testing.T) {
	pkgs := scanPackages(t, repoRoot)
	if _, ok := pkgs[modulePrefix]; !ok {
		t.Fatalf("scan found no %s among %d packages", modulePrefix, len(pkgs))
	}
	var declared []string
	for path, p := range pkgs {
		if p.model {
			declared = append(declared, path)
		}
		under := strings.HasPrefix(path, modulePrefix+"/")
		if under && !strings.HasPrefix(path, capabilityPrefix) && !slices.Contains(modelPackages, path) {
			t.Errorf("%s is neither a model room nor a capability (capabilities live under %s)", path, capabilityPrefix)
		}
	}
	slices.Sort(declared)
	if !slices.Equal(declared, modelPackages) {
		t.Errorf("packages declaring a pipeline %v, want the model rooms %v", declared, modelPackages)
	}
	for _, v := range layoutViolations(pkgs, modelPackages) {
		t.Error(v)
	}
}

// TestLayoutViolations checks the rules themselves on small import graphs.
func TestLayoutViolations(t *testing.T) {
	const (
		a, b   = modulePrefix + "/a", modulePrefix + "/b"
		capPkg = capabilityPrefix + "cap"
		jobs   = module + "/jobs"
		cmd    = cmdPrefix + "fashiond"
	)
	models := []string{a, b}
	tests := []struct {
		name string
		pkgs map[string]pkgInfo
		want []string
	}{
		{"clean", map[string]pkgInfo{a: {imports: []string{capPkg, "image"}}, b: {imports: []string{capPkg}}, capPkg: {}}, nil},
		{"model imports model", map[string]pkgInfo{a: {imports: []string{b}}, b: {}},
			[]string{a + " imports " + b + " (a model room imports another model room)"}},
		{"capability imports model", map[string]pkgInfo{capPkg: {imports: []string{a, "fmt"}}},
			[]string{capPkg + " imports " + a + " (a capability imports a model room)"}},
		{"other room imports model", map[string]pkgInfo{jobs: {imports: []string{a}}},
			[]string{jobs + " imports " + a + " (only the composition root imports model rooms)"}},
		{"root may import all", map[string]pkgInfo{rootPkg: {imports: []string{a, b, configPkg}}}, nil},
		{"cmd imports config", map[string]pkgInfo{cmd: {imports: []string{configPkg}}}, nil},
		{"config's own external test", map[string]pkgInfo{configPkg: {imports: []string{configPkg}}}, nil},
		{"room imports config", map[string]pkgInfo{jobs: {imports: []string{configPkg}}, capPkg: {imports: []string{configPkg}}},
			[]string{jobs + " imports " + configPkg + " (only the composition root and cmd import config)",
				capPkg + " imports " + configPkg + " (only the composition root and cmd import config)"}},
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
