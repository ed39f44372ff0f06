package inference

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"fashiond/cuda"

	ort "github.com/yalue/onnxruntime_go"
)

// discover is cuda.Discover; tests replace it.
var discover = cuda.Discover

// missingLibs is cuda.Missing; tests replace it.
var missingLibs = cuda.Missing

// coreCUDA is coreHasCUDA; tests replace it.
var coreCUDA = coreHasCUDA

// The two routes from ONNX Runtime to CUDA (Config.CUDARoute).
const (
	// RouteAuto picks RoutePlugin when ProviderLibrary lies beside the core
	// library and the core has no CUDA provider of its own, else
	// RouteInCore.
	RouteAuto = "auto"
	// RouteInCore is the CUDA provider of official GPU builds:
	// CreateCUDAProviderOptions + SessionOptionsAppendExecutionProvider_CUDA_V2.
	RouteInCore = "in-core"
	// RoutePlugin registers ProviderLibrary as a plugin execution provider
	// (RegisterExecutionProviderLibrary, once per process), picks the CUDA
	// EP device by device_id from GetEpDevices and appends it with
	// SessionOptionsAppendExecutionProvider_V2. This is how a CPU-build
	// core (the npm GPU runtime, scripts/setup-gpu.sh) reaches CUDA.
	RoutePlugin = "plugin"

	// ProviderLibrary is the CUDA execution provider's file name.
	ProviderLibrary = "libonnxruntime_providers_cuda.so"
	// cudaEPName is the name the CUDA provider gives its EP devices.
	cudaEPName = "CUDAExecutionProvider"
	// pluginRegistration is the name the plugin is registered under.
	pluginRegistration = "CUDA"
	// optionalCUDALib is loaded by the provider only for some kernels: its
	// absence is logged, not fatal.
	optionalCUDALib = "libnvrtc.so.13"
)

// fallbackLogged holds the CPU-fallback reasons already logged: each is
// logged once per process, not once per session.
var fallbackLogged sync.Map

// logFallback logs why sessions run on the CPU, once per reason.
func (r *Runtime) logFallback(reason string) {
	if _, seen := fallbackLogged.LoadOrStore(reason, true); seen {
		return
	}
	r.log.Warn("inference: using the CPU execution provider", "reason", reason)
}

// wantCUDA resolves the configured device against a session's preference:
// the operator's "cpu" wins, then the model's "cpu"; "cuda" in the
// configuration is a requirement, anything else a preference.
func (r *Runtime) wantCUDA(spec SessionSpec) (want, required bool) {
	if r.cfg.Device == "cpu" || spec.Device == "cpu" {
		return false, false
	}
	return true, r.cfg.Device == "cuda"
}

// cudaOptions are the provider options from the configuration, the same on
// both routes.
func (r *Runtime) cudaOptions() map[string]string {
	o := map[string]string{"device_id": strconv.Itoa(r.cfg.CUDADeviceID)}
	if r.cfg.CUDAMemLimit > 0 {
		o["gpu_mem_limit"] = strconv.FormatInt(r.cfg.CUDAMemLimit, 10)
	}
	if r.cfg.CUDNNConvSearch != "" {
		o["cudnn_conv_algo_search"] = r.cfg.CUDNNConvSearch
	}
	if r.cfg.CUDAArenaExtend != "" {
		o["arena_extend_strategy"] = r.cfg.CUDAArenaExtend
	}
	return o
}

// Placement is where sessions of one preference run and how CUDA is
// reached: for logs, `fashiond models`, GET /v1/models and /metrics.
type Placement struct {
	Device   string // "cpu" or "cuda"
	Route    string // RouteInCore or RoutePlugin for CUDA, "" on the CPU
	Library  string // the CUDA provider (plugin) or core library (in-core); "" on the CPU
	DeviceID int    // CUDA device id (cuda only)
	GPU      string // the device's name as the driver reports it (cuda only)
	// Reason says why the CPU is used although CUDA was wanted ("" when
	// CUDA is used or the CPU was asked for).
	Reason string
}

// String is one line: "cuda:0 NVIDIA H100 (plugin, /x/libonnxruntime_providers_cuda.so)" or "cpu".
func (p Placement) String() string {
	if p.Device != "cuda" {
		return "cpu"
	}
	return fmt.Sprintf("cuda:%d %s (%s, %s)", p.DeviceID, p.GPU, p.Route, p.Library)
}

// Public is String without the library path, for API clients:
// "cuda:0 NVIDIA H100 80GB HBM3 (plugin)" or "cpu".
func (p Placement) Public() string {
	if p.Device != "cuda" {
		return "cpu"
	}
	return fmt.Sprintf("cuda:%d %s (%s)", p.DeviceID, p.GPU, p.Route)
}

// route resolves the configured CUDA route and the library it uses.
func (r *Runtime) route() (route, lib string) {
	beside := filepath.Join(filepath.Dir(r.cfg.LibPath), ProviderLibrary)
	switch r.cfg.CUDARoute {
	case RoutePlugin:
		return RoutePlugin, beside
	case RouteInCore:
		return RouteInCore, r.cfg.LibPath
	}
	if _, err := os.Stat(beside); err == nil && !coreCUDA() {
		return RoutePlugin, beside
	}
	return RouteInCore, r.cfg.LibPath
}

// coreHasCUDA reports whether the loaded core library has a CUDA provider of
// its own (an official GPU build); a CPU build answers "CUDA execution
// provider is not enabled in this build".
func coreHasCUDA() bool {
	return guard(func() error {
		co, err := ort.NewCUDAProviderOptions()
		if err != nil {
			return err
		}
		return co.Destroy()
	}) == nil
}

// appendCUDA adds the CUDA provider to opts on the configured route, or says
// why it cannot: the library first (route, provider, CUDA user-space
// libraries), then the device.
func (r *Runtime) appendCUDA(opts *ort.SessionOptions) (Placement, string) {
	route, lib := r.route()
	p := Placement{Device: "cuda", Route: route, Library: lib, DeviceID: r.cfg.CUDADeviceID}
	switch {
	case route == RoutePlugin:
		if reason := r.registerPlugin(lib); reason != "" {
			return p, reason
		}
	case !coreCUDA():
		return p, fmt.Sprintf("the ONNX Runtime library %s is a CPU build with no %s beside it (run `make setup-gpu` and set FASHIOND_ORT_LIB to the library it prints)", lib, ProviderLibrary)
	}
	info := discover()
	if !info.Available() {
		return p, "no CUDA device: " + info.Reason
	}
	id := r.cfg.CUDADeviceID
	if id < 0 || id >= len(info.Devices) {
		return p, fmt.Sprintf("CUDA device id %d does not exist (%s)", id, info)
	}
	p.GPU = info.Devices[id].Name
	if route == RoutePlugin {
		return p, r.appendPlugin(opts)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(lib), ProviderLibrary)); err != nil {
		return p, fmt.Sprintf("the ONNX Runtime library %s has no %s beside it (run `make setup-gpu` and set FASHIOND_ORT_LIB to the library it prints)", lib, ProviderLibrary)
	}
	return p, r.appendInCore(opts)
}

// appendInCore appends the CUDA provider built into the core library.
func (r *Runtime) appendInCore(opts *ort.SessionOptions) string {
	err := guard(func() error {
		co, err := ort.NewCUDAProviderOptions()
		if err != nil {
			return err
		}
		defer co.Destroy()
		if err := co.Update(r.cudaOptions()); err != nil {
			return err
		}
		return opts.AppendExecutionProviderCUDA(co)
	})
	if err == nil {
		return ""
	}
	if missing := missingLibrary(err.Error()); missing != "" {
		return fmt.Sprintf("the CUDA provider of %s cannot load: %s is missing (docs/GPU.md lists the CUDA libraries)", r.cfg.LibPath, missing)
	}
	return fmt.Sprintf("the ONNX Runtime library %s cannot use CUDA: %s", r.cfg.LibPath, oneLine(err.Error()))
}

// DeviceFor reports the device a session with the given preference ("",
// "auto", "cpu" or "cuda") would use, and why it would use the CPU when
// CUDA was wanted. An error means the configuration requires CUDA and it
// cannot be had. Nothing is logged.
func (r *Runtime) DeviceFor(preferred string) (device, reason string, err error) {
	p, err := r.Placement(preferred)
	return p.Device, p.Reason, err
}

// Placement is DeviceFor with the route, library and GPU.
func (r *Runtime) Placement(preferred string) (Placement, error) {
	want, required := r.wantCUDA(SessionSpec{Device: preferred})
	if !want {
		return Placement{Device: "cpu"}, nil
	}
	var (
		p      Placement
		reason string
	)
	err := guard(func() error {
		opts, err := ort.NewSessionOptions()
		if err != nil {
			return err
		}
		defer opts.Destroy()
		p, reason = r.appendCUDA(opts)
		return nil
	})
	if err != nil {
		return Placement{}, err
	}
	if reason == "" {
		return p, nil
	}
	if required {
		return Placement{Reason: reason}, fmt.Errorf("FASHIOND_DEVICE=cuda but %s", reason)
	}
	return Placement{Device: "cpu", Reason: reason}, nil
}

// chooseDevice appends the CUDA provider when the configuration and the node
// allow it and reports the device the session will use. The reason for a
// CPU fallback is logged once per process; when the configuration requires
// CUDA ("cuda") and it cannot be had, the error says why.
func (r *Runtime) chooseDevice(spec SessionSpec, opts *ort.SessionOptions) (string, error) {
	want, required := r.wantCUDA(spec)
	if !want {
		return "cpu", nil
	}
	p, reason := r.appendCUDA(opts)
	if reason == "" {
		r.logPlacement(p)
		return "cuda", nil
	}
	if required {
		return "", fmt.Errorf("FASHIOND_DEVICE=cuda but %s", reason)
	}
	r.logFallback(reason)
	return "cpu", nil
}

// placementLogged holds the CUDA placements already logged.
var placementLogged sync.Map

// logPlacement logs the CUDA route, device and library once per process.
func (r *Runtime) logPlacement(p Placement) {
	if _, seen := placementLogged.LoadOrStore(p.String(), true); seen {
		return
	}
	r.log.Info("inference: using CUDA", "route", p.Route, "device_id", p.DeviceID, "gpu", p.GPU, "library", p.Library)
}

// CUDA is the result of GPU discovery for this process.
func (r *Runtime) CUDA() cuda.Info { return discover() }

// oneLine joins a multi-line message into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
