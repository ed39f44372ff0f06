package inference

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"fashiond/cuda"
)

// gpuRuntimeLib is the core library of the npm GPU runtime
// (scripts/setup-gpu.sh): FASHIOND_ORT_GPU_LIB, else the one under .deps.
// Tests that need it skip without it.
func gpuRuntimeLib(t *testing.T) string {
	t.Helper()
	lib := os.Getenv("FASHIOND_ORT_GPU_LIB")
	if lib == "" {
		lib, _ = filepath.Abs("../.deps/onnxruntime-gpu/1.29.0/libonnxruntime.so")
	}
	if _, err := os.Stat(lib); err != nil {
		t.Skipf("no GPU runtime at %s (make setup-gpu, or set FASHIOND_ORT_GPU_LIB)", lib)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(lib), ProviderLibrary)); err != nil {
		t.Skipf("no %s beside %s", ProviderLibrary, lib)
	}
	return lib
}

// One process loads one ONNX Runtime library, so each case runs the test
// binary again with TestPlacementChild and reads the line it prints.
const (
	childLib   = "FASHIOND_TEST_CHILD_ORT_LIB"
	childRoute = "FASHIOND_TEST_CHILD_ROUTE"
	childMode  = "FASHIOND_TEST_CHILD_MODE"
)

// TestPlacementChild is the child process of TestCUDARefusals: it opens the
// runtime with FASHIOND_DEVICE=cuda semantics and prints the error of
// Placement and of NewSession.
func TestPlacementChild(t *testing.T) {
	lib := os.Getenv(childLib)
	if lib == "" {
		t.Skip("run by TestCUDARefusals")
	}
	if os.Getenv(childMode) == "register" {
		// Skip the preflight so ONNX Runtime itself tries to load the
		// provider and its error is what gets explained.
		missingLibs = func(...string) []cuda.MissingLibrary { return nil }
	}
	rt, err := Open(context.Background(), Config{LibPath: lib, IntraOpThreads: 1, Device: "cuda", CUDARoute: os.Getenv(childRoute)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	p, err := rt.Placement("auto")
	t.Logf("route=%s", p.Route)
	os.Stdout.WriteString("PLACEMENT: " + errString(err) + "\n")
	_, err = rt.NewSession(context.Background(), selfieSpec(t))
	os.Stdout.WriteString("SESSION: " + errString(err) + "\n")
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestCUDARefusals(t *testing.T) {
	gpuLib := gpuRuntimeLib(t)
	coreOnly := filepath.Join(t.TempDir(), "libonnxruntime.so")
	if err := os.Symlink(gpuLib, coreOnly); err != nil {
		t.Fatal(err)
	}
	cudaLib := regexp.MustCompile(`lib(cu|nv)[A-Za-z]*\.so\.[0-9]+ (is|are) missing`)
	cases := []struct {
		name, lib, route, mode string
		want                   *regexp.Regexp
	}{
		{"CPU-build core, no provider library", coreOnly, "", "", regexp.MustCompile(`is a CPU build with no libonnxruntime_providers_cuda.so beside it`)},
		{"in-core route forced on the CPU-build core", gpuLib, RouteInCore, "", regexp.MustCompile(`is a CPU build`)},
		{"plugin: CUDA libraries missing (preflight)", gpuLib, "", "", regexp.MustCompile(`libonnxruntime_providers_cuda.so cannot load: libcudart.so.13, libcublas.so.13, .*are missing`)},
		{"plugin: ONNX Runtime's own load error", gpuLib, RoutePlugin, "register", cudaLib},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPlacementChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childLib+"="+c.lib, childRoute+"="+c.route, childMode+"="+c.mode)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var lines []string
			for _, l := range strings.Split(string(out), "\n") {
				if k, v, ok := strings.Cut(l, ": "); ok && (k == "PLACEMENT" || k == "SESSION") {
					lines = append(lines, v)
				}
			}
			if len(lines) != 2 {
				t.Fatalf("child output:\n%s", out)
			}
			for _, l := range lines {
				t.Log(l)
				if !strings.Contains(l, "FASHIOND_DEVICE=cuda but ") || !c.want.MatchString(l) {
					t.Fatalf("error %q: want FASHIOND_DEVICE=cuda but ... matching %q", l, c.want)
				}
			}
		})
	}
}

func TestMissingLibrary(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"Failed to load library /x/libonnxruntime_providers_cuda.so with error: libcudart.so.13: cannot open shared object file: No such file or directory", "libcudart.so.13"},
		{"libcublasLt.so.13: cannot open shared object file", "libcublasLt.so.13"},
		{"/opt/ort/libonnxruntime_providers_cuda.so: undefined symbol: foo", ""},
		{"", ""},
	} {
		if got := missingLibrary(c.msg); got != c.want {
			t.Errorf("missingLibrary(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

func TestRouteChoice(t *testing.T) {
	dir := t.TempDir()
	core := filepath.Join(dir, "libonnxruntime.so")
	defer func() { coreCUDA = coreHasCUDA }()
	for _, c := range []struct {
		name      string
		route     string
		provider  bool
		inCore    bool
		wantRoute string
	}{
		{"provider beside a CPU-build core", RouteAuto, true, false, RoutePlugin},
		{"provider beside a GPU build", RouteAuto, true, true, RouteInCore},
		{"no provider", RouteAuto, false, false, RouteInCore},
		{"forced plugin", RoutePlugin, false, true, RoutePlugin},
		{"forced in-core", RouteInCore, true, false, RouteInCore},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, ProviderLibrary))
			if c.provider {
				if err := os.WriteFile(filepath.Join(dir, ProviderLibrary), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			coreCUDA = func() bool { return c.inCore }
			r := &Runtime{cfg: Config{LibPath: core, CUDARoute: c.route}}
			got, lib := r.route()
			if got != c.wantRoute {
				t.Fatalf("route %q, want %q", got, c.wantRoute)
			}
			if want := map[string]string{RoutePlugin: filepath.Join(dir, ProviderLibrary), RouteInCore: core}[got]; lib != want {
				t.Fatalf("library %q, want %q", lib, want)
			}
		})
	}
	if _, err := Open(context.Background(), Config{LibPath: core, CUDARoute: "tensorrt"}, nil); err == nil || !strings.Contains(err.Error(), "tensorrt") {
		t.Fatalf("unknown route: %v", err)
	}
}

func TestPlacementStrings(t *testing.T) {
	p := Placement{Device: "cuda", Route: RoutePlugin, Library: "/opt/ort/libonnxruntime_providers_cuda.so", DeviceID: 1, GPU: "NVIDIA H100 80GB HBM3"}
	if got, want := p.String(), "cuda:1 NVIDIA H100 80GB HBM3 (plugin, /opt/ort/libonnxruntime_providers_cuda.so)"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	if got, want := p.Public(), "cuda:1 NVIDIA H100 80GB HBM3 (plugin)"; got != want {
		t.Errorf("Public %q, want %q", got, want)
	}
	if (Placement{Device: "cpu", Reason: "x"}).Public() != "cpu" || (Placement{}).String() != "cpu" {
		t.Error("cpu placement")
	}
}
