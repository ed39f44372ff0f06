package scheduler

import "math"

// This file holds the few numpy operations diffusers builds its timestep
// tables from, reproduced with numpy's exact float64 arithmetic so that the
// integer tables match to the last timestep (numpy rounds half to even, and
// arange/linspace accumulate their steps in a particular order).

// npLinspace is np.linspace(start, stop, num) (endpoint=True): y_i = i*step + start,
// with the last element forced to stop.
func npLinspace(start, stop float64, num int) []float64 {
	out := make([]float64, num)
	if num == 1 {
		out[0] = start
		return out
	}
	step := (stop - start) / float64(num-1)
	for i := range out {
		out[i] = float64(i)*step + start
	}
	out[num-1] = stop
	return out
}

// npLinspaceOpen is np.linspace(start, stop, num, endpoint=False).
func npLinspaceOpen(start, stop float64, num int) []float64 {
	out := make([]float64, num)
	step := (stop - start) / float64(num)
	for i := range out {
		out[i] = float64(i)*step + start
	}
	return out
}

// npArange is np.arange(start, stop, step) for float64 arguments: the length
// is ceil((stop-start)/step) and element i is start + i*delta, where delta is
// (start+step)-start as numpy's fill function computes it.
func npArange(start, stop, step float64) []float64 {
	n := int(math.Ceil((stop - start) / step))
	if n <= 0 {
		return nil
	}
	out := make([]float64, n)
	delta := (start + step) - start
	for i := range out {
		out[i] = start + float64(i)*delta
	}
	return out
}

// npInterp is np.interp(x, arange(len(fp)), fp): linear interpolation on the
// integer grid, clamped to the end values outside it.
func npInterp(x float64, fp []float64) float64 {
	last := len(fp) - 1
	switch {
	case x <= 0:
		return fp[0]
	case x >= float64(last):
		return fp[last]
	}
	lo := int(math.Floor(x))
	w := x - float64(lo)
	if w == 0 {
		return fp[lo]
	}
	return fp[lo] + w*(fp[lo+1]-fp[lo])
}

// roundAll rounds every element half to even (numpy's round).
func roundAll(v []float64) []float64 {
	for i := range v {
		v[i] = math.RoundToEven(v[i])
	}
	return v
}

// reversed returns a reversed copy.
func reversed(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[len(v)-1-i] = x
	}
	return out
}

// addAll adds c to every element in place.
func addAll(v []float64, c float64) []float64 {
	for i := range v {
		v[i] += c
	}
	return v
}

// float32s rounds every element to float32 precision (numpy astype(float32)).
func float32s(v []float64) []float64 {
	for i := range v {
		v[i] = float64(float32(v[i]))
	}
	return v
}

// scaledRange is (np.arange(0, n) * ratio) for an integer ratio.
func scaledRange(n, ratio int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i * ratio)
	}
	return out
}
