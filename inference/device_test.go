package inference

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"fashiond/cuda"
	"fashiond/internal/testenv"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func runtimeWith(t *testing.T, device string, logs *logBuf) *Runtime {
	t.Helper()
	lib := testenv.ORTLib()
	if l := testRuntime(t).Config().LibPath; l != "" {
		lib = l
	}
	rt, err := Open(context.Background(), Config{LibPath: lib, IntraOpThreads: 1, Device: device, CUDAMemLimit: 1 << 30, CUDNNConvSearch: "HEURISTIC"}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func selfieSpec(t *testing.T) SessionSpec {
	return SessionSpec{Name: "selfie_segmentation", Path: modelPath(t, "selfie_segmentation.onnx"), Inputs: []string{"input_1:0"}, Outputs: []string{"activation_10"}}
}

func resetFallbackLog() { fallbackLogged.Clear() }

func TestChooseDevice(t *testing.T) {
	realInfo := cuda.Discover()
	if realInfo.Available() {
		t.Skip("this node has a CUDA device; the fallback cases need a CPU-only node")
	}
	fakeGPU := cuda.Info{Devices: []cuda.Device{{Index: 0, Name: "Fake GPU", TotalMemory: 8 << 30, ComputeCapability: "9.0"}}, DriverVersion: "12.4"}
	cases := []struct {
		name       string
		cfgDevice  string
		specDevice string
		info       cuda.Info
		coreCUDA   bool // pretend the core library has an in-core CUDA provider
		wantDevice string
		wantErr    string // NewSession error
		wantLog    string // logged fallback reason
	}{
		{"auto, CPU-build core", "auto", "", realInfo, false, "cpu", "", "is a CPU build with no libonnxruntime_providers_cuda.so beside it"},
		{"auto without GPU", "auto", "", realInfo, true, "cpu", "", "no CUDA device: CUDA driver library libcuda.so.1 cannot be loaded"},
		{"auto, GPU but no provider library", "auto", "auto", fakeGPU, true, "cpu", "", "has no libonnxruntime_providers_cuda.so beside it"},
		{"auto, driver reports no device", "auto", "", cuda.Info{Devices: nil, Reason: "none"}, true, "cpu", "", "no CUDA device: none"},
		{"cpu configured", "cpu", "cuda", fakeGPU, false, "cpu", "", ""},
		{"model prefers cpu", "auto", "cpu", fakeGPU, false, "cpu", "", ""},
		{"cuda required, CPU-build core", "cuda", "", fakeGPU, false, "", "FASHIOND_DEVICE=cuda but the ONNX Runtime library", ""},
		{"cuda required, none", "cuda", "", realInfo, true, "", "FASHIOND_DEVICE=cuda but no CUDA device", ""},
		{"cuda required, no provider library", "cuda", "", fakeGPU, true, "", "has no libonnxruntime_providers_cuda.so beside it", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			discover = func() cuda.Info { return c.info }
			coreCUDA = func() bool { return c.coreCUDA }
			defer func() { discover, coreCUDA = cuda.Discover, coreHasCUDA }()
			resetFallbackLog()
			var logs logBuf
			rt := runtimeWith(t, c.cfgDevice, &logs)
			spec := selfieSpec(t)
			spec.Device = c.specDevice
			for range 2 {
				s, err := rt.NewSession(context.Background(), spec)
				if c.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("NewSession error %v, want one containing %q", err, c.wantErr)
					}
					if _, _, err := rt.DeviceFor(c.specDevice); err == nil {
						t.Fatal("DeviceFor: no error")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if s.Device() != c.wantDevice {
					t.Fatalf("device %q, want %q", s.Device(), c.wantDevice)
				}
				s.Close()
			}
			got := logs.String()
			t.Logf("log: %s", got)
			if c.wantLog == "" {
				if got != "" {
					t.Fatalf("unexpected log %q", got)
				}
			} else if strings.Count(got, "using the CPU execution provider") != 1 || !strings.Contains(got, c.wantLog) {
				t.Fatalf("log %q: want the reason %q logged exactly once for two sessions", got, c.wantLog)
			}
			dev, reason, err := rt.DeviceFor(c.specDevice)
			if err != nil || dev != c.wantDevice || (c.wantLog != "" && !strings.Contains(reason, c.wantLog)) {
				t.Fatalf("DeviceFor = %q, %q, %v", dev, reason, err)
			}
		})
	}
}

func TestCUDAOptionsFromConfig(t *testing.T) {
	r := &Runtime{cfg: Config{CUDADeviceID: 1, CUDAMemLimit: 2 << 30, CUDNNConvSearch: "EXHAUSTIVE"}}
	o := r.cudaOptions()
	if o["device_id"] != "1" || o["gpu_mem_limit"] != "2147483648" || o["cudnn_conv_algo_search"] != "EXHAUSTIVE" {
		t.Fatalf("options %v", o)
	}
	r = &Runtime{cfg: Config{}}
	if o := r.cudaOptions(); len(o) != 1 || o["device_id"] != "0" {
		t.Fatalf("default options %v", o)
	}
}

func TestRuntimeLifetime(t *testing.T) {
	var nilRT *Runtime
	if err := nilRT.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := nilRT.NewSession(context.Background(), SessionSpec{}); err == nil {
		t.Fatal("NewSession on nil runtime")
	}
	var logs logBuf
	rt := runtimeWith(t, "cpu", &logs)
	if rt.Version() == "" {
		t.Fatal("no version")
	}
	if _, err := Open(context.Background(), Config{LibPath: "/etc/hostname"}, nil); err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Fatalf("second library in one process: %v", err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := rt.NewSession(context.Background(), selfieSpec(t)); err == nil {
		t.Fatal("NewSession after Close")
	}
	if _, err := Open(context.Background(), Config{LibPath: ""}, nil); err == nil {
		t.Fatal("Open without a library")
	}
	var nilS *Session
	if err := nilS.Close(); err != nil {
		t.Fatal(err)
	}
	// A graph that does not exist is an error naming the model, not a panic.
	if _, err := testRuntime(t).NewSession(context.Background(), SessionSpec{Name: "ghost", Path: "/nonexistent.onnx", Inputs: []string{"x"}, Outputs: []string{"y"}}); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("missing graph: %v", err)
	}
}
