package pipelinetest

import (
	"image"
	"image/color"
	"testing"
)

func TestMeanAbsDiff(t *testing.T) {
	a := image.NewRGBA(image.Rect(0, 0, 2, 1))
	b := image.NewNRGBA(image.Rect(5, 5, 7, 6))
	a.Set(0, 0, color.RGBA{30, 0, 0, 255})
	b.Set(6, 5, color.NRGBA{0, 60, 0, 255})
	tests := []struct {
		name string
		x, y image.Image
		want float64
	}{
		{"same", a, a, 0},
		{"offset bounds", a, b, (30.0 + 60) / 6},
	}
	for _, tc := range tests {
		if got := MeanAbsDiff(tc.x, tc.y); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
