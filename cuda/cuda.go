// Package cuda discovers NVIDIA GPUs at run time. Nothing CUDA is linked at
// build time: the driver library (libcuda.so.1) is opened with dlopen, so
// the binary builds and runs on machines without CUDA, where Discover
// reports no devices and the reason.
package cuda

// #cgo LDFLAGS: -ldl
// #include <stdlib.h>
// #include "probe.h"
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// DriverLibrary is the CUDA driver library Discover opens.
const DriverLibrary = "libcuda.so.1"

// Device is one GPU as the CUDA driver reports it.
type Device struct {
	Index             int
	Name              string
	TotalMemory       uint64 // bytes
	ComputeCapability string // e.g. "9.0"
	PCIBus            int
}

// Info is the result of discovery.
type Info struct {
	Devices       []Device
	DriverVersion string // CUDA driver API version, e.g. "12.4"; "" without a driver
	KernelDriver  string // first line of /proc/driver/nvidia/version, "" when absent
	Library       string // the library probed
	// Reason says why Devices is empty ("" when it is not).
	Reason string
}

// Available reports whether at least one device was found.
func (i Info) Available() bool { return len(i.Devices) > 0 }

// String is a one-line summary for logs and `fashiond models`.
func (i Info) String() string {
	if !i.Available() {
		return "no CUDA device: " + i.Reason
	}
	parts := make([]string, len(i.Devices))
	for k, d := range i.Devices {
		parts[k] = fmt.Sprintf("#%d %s (%.1f GiB, sm %s)", d.Index, d.Name, float64(d.TotalMemory)/(1<<30), d.ComputeCapability)
	}
	return fmt.Sprintf("%d CUDA device(s), driver API %s: %s", len(i.Devices), i.DriverVersion, strings.Join(parts, ", "))
}

var (
	once   sync.Once
	cached Info
)

// Discover probes the CUDA driver once per process and returns the result.
func Discover() Info {
	once.Do(func() { cached = Probe(DriverLibrary) })
	return cached
}

// Probe opens lib (normally libcuda.so.1) and lists its devices. It never
// panics; failures are described in Info.Reason.
func Probe(lib string) Info {
	info := Info{Library: lib, KernelDriver: kernelDriver()}
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	var res C.fd_cuda_probe_result
	C.fd_cuda_probe(clib, &res)
	msg := C.GoString(&res.error[0])
	if v := int(res.driver_version); v > 0 {
		info.DriverVersion = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	}
	switch res.status {
	case 1:
		info.Reason = fmt.Sprintf("CUDA driver library %s cannot be loaded (%s)", lib, msg)
		if info.KernelDriver == "" {
			info.Reason += "; no NVIDIA kernel driver (/proc/driver/nvidia/version is absent)"
		}
		return info
	case 2:
		info.Reason = msg
		return info
	case 3:
		if int(res.cu_result) == 100 { // CUDA_ERROR_NO_DEVICE
			info.Reason = "the CUDA driver found no device (" + msg + ")"
		} else {
			info.Reason = "the CUDA driver failed: " + msg
		}
		return info
	}
	n := min(int(res.count), C.FD_CUDA_MAX_DEVICES)
	for k := range n {
		d := res.devices[k]
		info.Devices = append(info.Devices, Device{
			Index:             k,
			Name:              C.GoString(&d.name[0]),
			TotalMemory:       uint64(d.total_mem),
			ComputeCapability: fmt.Sprintf("%d.%d", int(d.cc_major), int(d.cc_minor)),
			PCIBus:            int(d.pci_bus),
		})
	}
	if len(info.Devices) == 0 {
		info.Reason = fmt.Sprintf("the CUDA driver reports 0 devices (CUDA_VISIBLE_DEVICES=%q)", os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	return info
}

func kernelDriver() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// UserSpace13 are the CUDA 13 user-space libraries ONNX Runtime's CUDA 13
// execution provider needs: linked (cudart, cuBLAS, cuBLASLt, cuRAND) or
// opened at run time (cuDNN 9 by its unversioned name, NVRTC). docs/GPU.md
// says where an operator gets them.
var UserSpace13 = []string{"libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcurand.so.10", "libcudnn.so", "libnvrtc.so.13"}

// Missing returns the libraries of libs the dynamic loader cannot open
// here, in order, each with the loader's message.
func Missing(libs ...string) []MissingLibrary {
	var out []MissingLibrary
	var buf [512]C.char
	for _, lib := range libs {
		clib := C.CString(lib)
		rc := C.fd_can_load(clib, &buf[0], C.size_t(len(buf)))
		C.free(unsafe.Pointer(clib))
		if rc != 0 {
			out = append(out, MissingLibrary{Name: lib, Error: C.GoString(&buf[0])})
		}
	}
	return out
}

// MissingLibrary is a library the dynamic loader could not open.
type MissingLibrary struct {
	Name  string
	Error string // dlerror()
}
