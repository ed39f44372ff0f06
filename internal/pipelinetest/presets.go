package pipelinetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"fashiond/pipelines/capability/presets"
)

// PresetLibrary installs the built-in presets into a temporary directory
// with scripts/setup-presets.sh (from the shared test photos) and opens it.
func PresetLibrary(t testing.TB) *presets.Library {
	t.Helper()
	data := t.TempDir()
	cmd := exec.Command(filepath.Join(Root(), "scripts", "setup-presets.sh"))
	cmd.Env = append(os.Environ(), "FASHIOND_DATA_DIR="+data, "FASHIOND_PRESETS_SRC="+File(t, "images"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup-presets.sh: %v\n%s", err, out)
	}
	l, err := presets.Open(filepath.Join(data, "presets"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}
