package inference

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"fashiond/cuda"

	ort "github.com/yalue/onnxruntime_go"
)

// plugin is the process's plugin registration: ONNX Runtime registers an
// execution-provider library once per environment, so the result (success
// or the reason it failed) is kept until the environment is destroyed.
var plugin struct {
	mu     sync.Mutex
	lib    string // the library registration was tried with; "" none
	reason string // why it failed; "" registered
}

// resetPlugin forgets the registration; the environment is being destroyed
// (envMu held).
func resetPlugin() {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	plugin.lib, plugin.reason = "", ""
}

// registerPlugin registers the CUDA provider library lib, once per process,
// after checking that the CUDA user-space libraries it needs load here. It
// returns why it cannot ("" when registered).
func (r *Runtime) registerPlugin(lib string) string {
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	if plugin.lib == lib {
		return plugin.reason
	}
	if plugin.lib != "" {
		return fmt.Sprintf("the CUDA provider %s is already registered in this process; cannot also use %s", plugin.lib, lib)
	}
	plugin.lib, plugin.reason = lib, r.tryRegister(lib)
	return plugin.reason
}

func (r *Runtime) tryRegister(lib string) string {
	if _, err := os.Stat(lib); err != nil {
		return fmt.Sprintf("the CUDA provider %s is absent (run `make setup-gpu`)", lib)
	}
	var required, optional []string
	for _, m := range missingLibs(cuda.UserSpace13...) {
		if m.Name == optionalCUDALib {
			optional = append(optional, m.Name)
			continue
		}
		required = append(required, m.Name)
	}
	if len(required) > 0 {
		return fmt.Sprintf("the CUDA provider %s cannot load: %s missing (CUDA 13 user-space libraries; docs/GPU.md says where to get them)",
			lib, plural(required))
	}
	if len(optional) > 0 {
		r.log.Warn("inference: CUDA provider: a library loaded for some kernels is missing", "missing", optional)
	}
	err := guard(func() error { return ort.RegisterExecutionProviderLibrary(pluginRegistration, lib) })
	if err == nil {
		return ""
	}
	if missing := missingLibrary(err.Error()); missing != "" {
		return fmt.Sprintf("the CUDA provider %s cannot load: %s is missing (docs/GPU.md lists the CUDA libraries)", lib, missing)
	}
	return fmt.Sprintf("the CUDA provider %s cannot be registered: %s", lib, oneLine(err.Error()))
}

// appendPlugin appends the registered CUDA provider's device device_id.
func (r *Runtime) appendPlugin(opts *ort.SessionOptions) string {
	var reason string
	err := guard(func() error {
		all, err := ort.GetEpDevices()
		if err != nil {
			return err
		}
		var devs []ort.EpDevice
		for _, d := range all {
			if d.EpName() == cudaEPName {
				devs = append(devs, d)
			}
		}
		id := r.cfg.CUDADeviceID
		if id < 0 || id >= len(devs) {
			reason = fmt.Sprintf("the CUDA provider offers %d device(s), no device_id %d", len(devs), id)
			return nil
		}
		return opts.AppendExecutionProviderV2(devs[id:id+1], r.cudaOptions())
	})
	if err != nil {
		return fmt.Sprintf("the CUDA provider %s cannot be appended: %s", ProviderLibrary, oneLine(err.Error()))
	}
	return reason
}

// missingLibRE finds the library a failed dlopen names.
var missingLibRE = regexp.MustCompile(`(lib[A-Za-z0-9_.+-]*\.so[0-9.]*): cannot open shared object file`)

// missingLibrary is the library a loader error says is missing, or "".
func missingLibrary(msg string) string {
	if m := missingLibRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// plural is "a is" or "a, b are".
func plural(names []string) string {
	if len(names) == 1 {
		return names[0] + " is"
	}
	return strings.Join(names, ", ") + " are"
}
