package rdb

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAsynqNamesPinned pins asynq.go to the asynq in go.mod: it fails when
// go.mod requires another version than AsynqVersion (re-read asynq's
// internal/base and update the names and AsynqVersion), and checks each
// name against asynq's own source of that version in the module cache.
func TestAsynqNamesPinned(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(moduleRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/hibiken/asynq (v\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/hibiken/asynq")
	}
	if got := string(m[1]); got != AsynqVersion {
		t.Fatalf("go.mod requires asynq %s, asynq.go's names were checked against %s: compare them with internal/base/base.go of %s, then update AsynqVersion", got, AsynqVersion, got)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hibiken/asynq").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("asynq's module source is not in the module cache (go mod download github.com/hibiken/asynq): %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal", "base", "base.go"))
	if err != nil {
		t.Fatal(err)
	}
	base := string(src)
	// Each name as asynq's base.go builds it, and ours for queue q, task id.
	for _, c := range []struct{ asynq, ours, want string }{
		{`return "asynq:{" + qname + "}:"`, asynqQueuePrefix("q"), "asynq:{q}:"},
		{`return QueueKeyPrefix(qname) + "lease"`, LeaseKey("q"), "asynq:{q}:lease"},
		{`return QueueKeyPrefix(qname) + "pending"`, PendingKey("q"), "asynq:{q}:pending"},
		{`return QueueKeyPrefix(qname) + "active"`, ActiveKey("q"), "asynq:{q}:active"},
		{`return QueueKeyPrefix(qname) + "t:"`, TaskKey("q", ""), "asynq:{q}:t:"},
		{`return TaskKeyPrefix(qname) + id`, TaskKey("q", "id"), "asynq:{q}:t:id"},
	} {
		if !strings.Contains(base, c.asynq) {
			t.Errorf("asynq %s's internal/base no longer says %s", AsynqVersion, c.asynq)
		}
		if c.ours != c.want {
			t.Errorf("our name %q, want %q", c.ours, c.want)
		}
	}
	if !strings.HasPrefix(LeaseKey("q"), AsynqKeyPrefix) {
		t.Errorf("AsynqKeyPrefix %q does not start asynq's keys", AsynqKeyPrefix)
	}
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}
