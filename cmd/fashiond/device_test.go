package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/cuda"
	"fashiond/internal/testenv"
)

// TestCUDARequiredRefusesToStart: FASHIOND_DEVICE=cuda on a node without a
// usable CUDA stops serve and worker before anything starts, with one line
// naming why: the CPU runtime (no CUDA provider here), and the npm GPU
// runtime (scripts/setup-gpu.sh) whose CUDA 13 libraries this node lacks.
func TestCUDARequiredRefusesToStart(t *testing.T) {
	if cuda.Discover().Available() {
		t.Skip("this node has a CUDA device")
	}
	bin := buildBinary(t)
	libs := map[string]string{"cpu runtime": testenv.ORTLib()}
	gpu, _ := filepath.Abs("../../.deps/onnxruntime-gpu/1.29.0/libonnxruntime.so")
	if l := os.Getenv("FASHIOND_ORT_GPU_LIB"); l != "" {
		gpu = l
	}
	if _, err := os.Stat(gpu); err == nil {
		libs["npm gpu runtime"] = gpu
	} else {
		t.Logf("no GPU runtime at %s (make setup-gpu): only the CPU runtime is checked", gpu)
	}
	for name, lib := range libs {
		for _, role := range []string{"serve", "worker"} {
			t.Run(name+"/"+role, func(t *testing.T) {
				cmd := exec.Command(bin, role)
				cmd.Env = append(os.Environ(), "FASHIOND_DATA_DIR="+t.TempDir(), "FASHIOND_REDIS_URL=redis://127.0.0.1:1",
					"FASHIOND_DEVICE=cuda", "FASHIOND_ORT_LIB="+lib, "FASHIOND_ADDR=127.0.0.1:0")
				out, _ := cmd.CombinedOutput()
				if code := cmd.ProcessState.ExitCode(); code != 1 {
					t.Fatalf("exit %d, want 1:\n%s", code, out)
				}
				got := strings.TrimSuffix(string(out), "\n")
				t.Log(got)
				if strings.Contains(got, "\n") || !strings.HasPrefix(got, "fashiond "+role+": FASHIOND_DEVICE=cuda but ") {
					t.Fatalf("want one line \"fashiond %s: FASHIOND_DEVICE=cuda but <why>\", got:\n%s", role, out)
				}
			})
		}
	}
}
