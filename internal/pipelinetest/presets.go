package pipelinetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PresetDir installs the built-in presets into a temporary directory with
// scripts/setup-presets.sh (from the shared test photos) and returns the
// library's directory for presets.Open (this package cannot import
// presets: presets' own tests import this package).
func PresetDir(t testing.TB) string {
	t.Helper()
	data := t.TempDir()
	cmd := exec.Command(filepath.Join(Root(), "scripts", "setup-presets.sh"))
	cmd.Env = append(os.Environ(), "FASHIOND_DATA_DIR="+data, "FASHIOND_PRESETS_SRC="+File(t, "images"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup-presets.sh: %v\n%s", err, out)
	}
	return filepath.Join(data, "presets")
}
