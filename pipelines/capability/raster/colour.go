package raster

import "math"

// The sRGB transfer function's breakpoints and constants (IEC 61966-2-1).
const (
	srgbKnee   = 0.04045   // encoded value below which the curve is linear
	linearKnee = 0.0031308 // linear value below which the curve is linear
	srgbSlope  = 12.92
	srgbOffset = 0.055
	srgbGamma  = 2.4
)

// SRGBToLinear decodes an sRGB value (0..1) to linear light.
func SRGBToLinear(v float64) float64 {
	if v <= srgbKnee {
		return v / srgbSlope
	}
	return math.Pow((v+srgbOffset)/(1+srgbOffset), srgbGamma)
}

// LinearToSRGB encodes linear light (0..1) as sRGB.
func LinearToSRGB(v float64) float64 {
	if v <= linearKnee {
		return srgbSlope * v
	}
	return (1+srgbOffset)*math.Pow(v, 1/srgbGamma) - srgbOffset
}

// SRGBTable returns linear light for every byte value (byte/255 decoded).
func SRGBTable() [256]float64 {
	var t [256]float64
	for i := range t {
		t[i] = SRGBToLinear(float64(i) / 255)
	}
	return t
}
