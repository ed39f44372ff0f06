package prompttryon

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"fashiond/internal/pipelinetest"
)

// copyPresets installs the preset library into dir with the setup script.
func copyPresets(t *testing.T, dir string) error {
	cmd := exec.Command(filepath.Join(pipelinetest.Root(), "scripts", "setup-presets.sh"))
	cmd.Env = append(os.Environ(), "FASHIOND_PRESETS_DIR="+dir, "FASHIOND_PRESETS_SRC="+pipelinetest.File(t, "images"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s", out)
	}
	return err
}
