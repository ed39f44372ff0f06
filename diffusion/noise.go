package diffusion

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Noise is the first n values of the standard normal stream a job with
// this seed draws from. A job takes its draws in this order: the VAE
// encoder's sampling noise of each encoded image (masked image first, then
// the image or garment), then the initial latent noise, then the
// scheduler's noise per step (ancestral and eta > 0 samplers, LCM). A
// reference implementation fed these values as its noise reproduces
// fashiond's picture for the seed (scripts/reference, `fashiond models
// verify --reference`).
func Noise(seed uint64, n int) []float32 {
	return gaussian(newRNG(seed), n)
}

// WriteFloats writes v as little-endian float32 values (the layout of the
// noise and pixel files of the parity fixtures and reference folders).
func WriteFloats(w io.Writer, v []float32) error {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	_, err := w.Write(buf)
	return err
}

// ReadFloats decodes little-endian float32 values; the length must be a
// multiple of 4.
func ReadFloats(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("diffusion: float32 file has %d bytes, not a multiple of 4", len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}
