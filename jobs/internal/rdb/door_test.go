package rdb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// redisText matches what only the Redis layer may write: a Lua script's
// calls, a key of the job system (current or old layout) or of asynq, an
// event channel.
var redisText = regexp.MustCompile(`redis\.p?call|\{fashiond\}|(^|[^\w.])fashiond:[a-z_{]|asynq:\{|^asynq:`)

// scriptCalls are the go-redis methods that run Lua.
var scriptCalls = map[string]bool{"NewScript": true, "Eval": true, "EvalSha": true, "EvalRO": true, "EvalShaRO": true, "ScriptLoad": true}

// TestOnlyRedisLayerSpeaksRedis scans every Go file of the module outside
// this package (tests included) and fails on a string literal holding a
// Lua script or a Redis key name, and on a call that runs Lua: the key
// names and scripts live here only.
func TestOnlyRedisLayerSpeaksRedis(t *testing.T) {
	root := moduleRoot(t)
	self, _ := filepath.Abs(".")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path == self || path != root && (strings.HasPrefix(name, ".") || name == "data" || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		for _, bad := range redisSpeech(t, path) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s: %s (key names and Lua live in jobs/internal/rdb)", rel, bad)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files: the walk missed the module", files)
	}
}

// redisSpeech lists what path says that only this package may say.
func redisSpeech(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err == nil && redisText.MatchString(s) {
				out = append(out, fset.Position(n.Pos()).String()+": "+strconv.Quote(clip(s)))
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && scriptCalls[sel.Sel.Name] {
				out = append(out, fset.Position(n.Pos()).String()+": runs Lua ("+sel.Sel.Name+")")
			}
		}
		return true
	})
	return out
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// TestRedisTextMatches: the scan's pattern finds what it must and spares
// the service's other uses of its name.
func TestRedisTextMatches(t *testing.T) {
	for s, want := range map[string]bool{
		"redis.call('GET', KEYS[1])":   true,
		"{fashiond}:job:":              true,
		"fashiond:credits:":            true,
		"fashiond:events:":             true,
		"asynq:{fashiond:tryon}:lease": true,
		"asynq:":                       true,
		"fashiond: unknown command":    false,
		"fashiond:":                    false,
		"a fashiond job":               false,
		"github.com/hibiken/asynq":     false,
	} {
		if got := redisText.MatchString(s); got != want {
			t.Errorf("%q: matched %v, want %v", s, got, want)
		}
	}
}
