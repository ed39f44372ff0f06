package cuda

import (
	"os"
	"strings"
	"testing"
)

func TestDiscoverOnThisMachine(t *testing.T) {
	info := Discover()
	t.Logf("%s", info)
	if info.Library != DriverLibrary {
		t.Fatalf("library %q", info.Library)
	}
	if again := Discover(); again.String() != info.String() {
		t.Fatal("Discover is not stable within a process")
	}
	_, nvidia := os.Stat("/proc/driver/nvidia/version")
	if nvidia != nil {
		// No NVIDIA driver here (CI, this build machine): no devices and
		// a reason naming the library.
		if info.Available() || !strings.Contains(info.Reason, DriverLibrary) {
			t.Fatalf("want no devices and a reason naming %s, got %+v", DriverLibrary, info)
		}
		if !strings.HasPrefix(info.String(), "no CUDA device: ") {
			t.Fatalf("summary %q", info.String())
		}
		return
	}
	if info.Available() {
		for _, d := range info.Devices {
			if d.Name == "" || d.TotalMemory == 0 || d.ComputeCapability == "0.0" {
				t.Fatalf("incomplete device %+v", d)
			}
		}
		if info.DriverVersion == "" || info.Reason != "" {
			t.Fatalf("info %+v", info)
		}
	} else if info.Reason == "" {
		t.Fatal("no devices and no reason")
	}
}

func TestProbeFailures(t *testing.T) {
	for _, tc := range []struct {
		lib, want string
	}{
		{"libfashiond-no-such-cuda.so.1", "cannot be loaded"},
		{"libc.so.6", "lacks the CUDA driver API"},
	} {
		info := Probe(tc.lib)
		if info.Available() || !strings.Contains(info.Reason, tc.want) {
			t.Errorf("Probe(%s) = %+v, want reason containing %q", tc.lib, info, tc.want)
		}
	}
}

func TestMissing(t *testing.T) {
	got := Missing("libc.so.6", "libfashiond-no-such-lib.so.13", "libm.so.6")
	if len(got) != 1 || got[0].Name != "libfashiond-no-such-lib.so.13" || !strings.Contains(got[0].Error, "libfashiond-no-such-lib.so.13") {
		t.Fatalf("Missing = %+v, want only libfashiond-no-such-lib.so.13 with the loader's message", got)
	}
	if got := Missing(); got != nil {
		t.Fatalf("Missing() = %+v", got)
	}
}
