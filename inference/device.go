package inference

import (
	"fmt"
	"strconv"
	"sync"

	"fashiond/cuda"

	ort "github.com/yalue/onnxruntime_go"
)

// discover is cuda.Discover; tests replace it.
var discover = cuda.Discover

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

// cudaOptions are the provider options from the configuration.
func (r *Runtime) cudaOptions() map[string]string {
	o := map[string]string{"device_id": strconv.Itoa(r.cfg.CUDADeviceID)}
	if r.cfg.CUDAMemLimit > 0 {
		o["gpu_mem_limit"] = strconv.FormatInt(r.cfg.CUDAMemLimit, 10)
	}
	if r.cfg.CUDNNConvSearch != "" {
		o["cudnn_conv_algo_search"] = r.cfg.CUDNNConvSearch
	}
	return o
}

// appendCUDA adds the CUDA provider to opts, or says why it cannot.
func (r *Runtime) appendCUDA(opts *ort.SessionOptions) (reason string) {
	info := discover()
	if !info.Available() {
		return "no CUDA device: " + info.Reason
	}
	if id := r.cfg.CUDADeviceID; id < 0 || id >= len(info.Devices) {
		return fmt.Sprintf("CUDA device id %d does not exist (%s)", id, info)
	}
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
	if err != nil {
		return fmt.Sprintf("the ONNX Runtime library %s cannot use CUDA (%v); point FASHIOND_ORT_LIB at the GPU build", r.cfg.LibPath, err)
	}
	return ""
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
	reason := r.appendCUDA(opts)
	if reason == "" {
		return "cuda", nil
	}
	if required {
		return "", fmt.Errorf("FASHIOND_DEVICE=cuda but %s", reason)
	}
	r.logFallback(reason)
	return "cpu", nil
}

// DeviceFor reports the device a session with the given preference ("",
// "auto", "cpu" or "cuda") would use, and why it would use the CPU when
// CUDA was wanted. An error means the configuration requires CUDA and it
// cannot be had. Nothing is logged.
func (r *Runtime) DeviceFor(preferred string) (device, reason string, err error) {
	want, required := r.wantCUDA(SessionSpec{Device: preferred})
	if !want {
		return "cpu", "", nil
	}
	err = guard(func() error {
		opts, err := ort.NewSessionOptions()
		if err != nil {
			return err
		}
		defer opts.Destroy()
		reason = r.appendCUDA(opts)
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if reason == "" {
		return "cuda", "", nil
	}
	if required {
		return "", reason, fmt.Errorf("FASHIOND_DEVICE=cuda but %s", reason)
	}
	return "cpu", reason, nil
}

// CUDA is the result of GPU discovery for this process.
func (r *Runtime) CUDA() cuda.Info { return discover() }
