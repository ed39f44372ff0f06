package scheduler

import (
	"fmt"
	"strings"
)

// Kind names a sampling method.
type Kind string

// The supported methods.
const (
	Euler          Kind = "euler"   // EulerDiscreteScheduler
	EulerAncestral Kind = "euler-a" // EulerAncestralDiscreteScheduler
	DDIM           Kind = "ddim"    // DDIMScheduler
	DPMPP2M        Kind = "dpm++2m" // DPMSolverMultistepScheduler
	LCM            Kind = "lcm"     // LCMScheduler
	PNDM           Kind = "pndm"    // PNDMScheduler
)

// kindClasses maps each Kind to its diffusers class, in a stable order used
// by error messages.
var kindClasses = []struct {
	kind  Kind
	class string
}{
	{PNDM, "PNDMScheduler"},
	{Euler, "EulerDiscreteScheduler"},
	{EulerAncestral, "EulerAncestralDiscreteScheduler"},
	{DDIM, "DDIMScheduler"},
	{DPMPP2M, "DPMSolverMultistepScheduler"},
	{LCM, "LCMScheduler"},
}

// KindOf maps a diffusers _class_name to its Kind.
func KindOf(className string) (Kind, error) {
	for _, kc := range kindClasses {
		if kc.class == className {
			return kc.kind, nil
		}
	}
	names := make([]string, len(kindClasses))
	for i, kc := range kindClasses {
		names[i] = kc.class
	}
	return "", fmt.Errorf("scheduler: _class_name %q is not supported (supported: %s)",
		className, strings.Join(names, ", "))
}

// ParseKind parses a method name ("euler", "euler-a", "ddim", "dpm++2m",
// "lcm", "pndm"; case and surrounding space are ignored).
func ParseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(strings.TrimSpace(s)))
	for _, kc := range kindClasses {
		if kc.kind == k {
			return k, nil
		}
	}
	return "", fmt.Errorf("scheduler: unknown method %q (supported: %s)", s, kindList())
}

// ClassName is the diffusers class that implements k ("" for an unknown kind).
func (k Kind) ClassName() string {
	for _, kc := range kindClasses {
		if kc.kind == k {
			return kc.class
		}
	}
	return ""
}

func kindList() string {
	names := make([]string, len(kindClasses))
	for i, kc := range kindClasses {
		names[i] = string(kc.kind)
	}
	return strings.Join(names, ", ")
}
