package inference

import (
	"math"
	"testing"
)

func TestHalfConversion(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},
		{65520, 0x7c00}, // rounds up to +Inf
		{1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{6.103515625e-05, 0x0400},       // smallest normal
		{1e-9, 0x0000},
		{0.1, 0x2e66},
		{1.0009765625, 0x3c01},  // 1 + 2^-10 exactly representable
		{1.00048828125, 0x3c00}, // halfway between 0x3c00 and 0x3c01: to even
		{1.00146484375, 0x3c02}, // halfway between 0x3c01 and 0x3c02: to even
	}
	for _, c := range cases {
		if got := Float32ToHalf(c.in); got != c.want {
			t.Errorf("Float32ToHalf(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if h := Float32ToHalf(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN -> %#04x", h)
	}
}

func TestHalfRoundTrip(t *testing.T) {
	// Every finite half converts to float32 and back to itself.
	for h := range uint32(0x10000) {
		u := uint16(h)
		if u&0x7c00 == 0x7c00 && u&0x3ff != 0 {
			continue // NaN payloads
		}
		if got := Float32ToHalf(HalfToFloat32(u)); got != u {
			t.Fatalf("round trip %#04x -> %g -> %#04x", u, HalfToFloat32(u), got)
		}
	}
}
