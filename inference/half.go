package inference

import "math"

// Float32ToHalf converts to IEEE 754 binary16 with round-to-nearest-even;
// values beyond the half range become infinities, NaN stays NaN.
func Float32ToHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23) & 0xff
	mant := bits & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	switch {
	case e >= 31:
		return sign | 0x7c00
	case e <= 0:
		return sign | halfSubnormal(mant, e)
	}
	h := uint16(e)<<10 | uint16(mant>>13)
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct rounding
	}
	return sign | h
}

// halfSubnormal rounds a float32 mantissa with half exponent e <= 0 to a
// subnormal half (or zero).
func halfSubnormal(mant uint32, e int) uint16 {
	if e < -10 {
		return 0
	}
	mant |= 0x800000
	shift := uint(14 - e)
	h := uint16(mant >> shift)
	rem := mant & (1<<shift - 1)
	halfway := uint32(1) << (shift - 1)
	if rem > halfway || (rem == halfway && h&1 == 1) {
		h++
	}
	return h
}

// HalfToFloat32 converts an IEEE 754 binary16 value to float32 (exact).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			return -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
