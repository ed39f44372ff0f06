package inference

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetupGPURefusesBadTarballs runs scripts/setup-gpu.sh with an npm that
// delivers corrupted tarballs (or fails): the script refuses, deletes the
// tarball and installs nothing. (The real download is `make setup-gpu`.)
func TestSetupGPURefusesBadTarballs(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl")
	}
	script, _ := filepath.Abs("../scripts/setup-gpu.sh")
	for _, c := range []struct {
		name, npm, want string
		cached          bool
	}{
		{"corrupted download", "#!/bin/sh\nhead -c 4096 /dev/urandom > \"$(echo \"$3\" | sed 's/@/-/').tgz\"\n", "tarball integrity sha512-", false},
		{"corrupted cache, npm fails", "#!/bin/sh\necho offline >&2\nexit 1\n", "npm pack com.github.asus4.onnxruntime@0.4.9 failed", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			deps := t.TempDir()
			npm := filepath.Join(t.TempDir(), "npm")
			if err := os.WriteFile(npm, []byte(c.npm), 0o755); err != nil {
				t.Fatal(err)
			}
			tgz := filepath.Join(deps, "npm-cache", "com.github.asus4.onnxruntime-0.4.9.tgz")
			if c.cached {
				os.MkdirAll(filepath.Dir(tgz), 0o755)
				os.WriteFile(tgz, []byte("not the package"), 0o644)
			}
			cmd := exec.Command(script)
			cmd.Env = append(os.Environ(), "FASHIOND_DEPS_DIR="+deps, "NPM="+npm)
			out, err := cmd.CombinedOutput()
			t.Logf("%s", out)
			if err == nil || !strings.Contains(string(out), c.want) {
				t.Fatalf("setup-gpu.sh: %v, want a refusal containing %q", err, c.want)
			}
			if c.name == "corrupted download" && !strings.Contains(string(out), "refused") {
				t.Fatal("no refusal")
			}
			if _, err := os.Stat(filepath.Join(deps, "onnxruntime-gpu", "1.29.0", "libonnxruntime.so")); err == nil {
				t.Fatal("installed from a bad tarball")
			}
			if !c.cached {
				if _, err := os.Stat(tgz); err == nil {
					t.Fatal("the corrupted tarball was kept")
				}
			}
		})
	}
}
