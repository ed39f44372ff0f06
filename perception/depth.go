package perception

import (
	"context"
	"fmt"
	"image"

	"fashiond/inference"
)

// ModelDepth is the optional relative depth graph.
const ModelDepth = "tcmonodepth_small"

const depthW, depthH = 320, 192

// prepareDepth packs RGB 0..255, NOT (x/255-0.5)/0.5 as MODELS.md says:
// the graph starts with its own Div by 255 (the normalisation is folded
// into the first convolution). With the documented normalisation the
// output is a plain top-to-bottom ramp with no objects in it (checked on
// astronaut.png and fashn_model.webp); with 0..255 the person stands out.
func prepareDepth(img image.Image) inference.Tensor {
	t := inference.Tensor{Shape: []int64{1, 3, depthH, depthW}, Data: make([]float32, 3*depthW*depthH)}
	packNCHW(t.Data, resizeLinear(img, depthW, depthH), [3]int{0, 1, 2}, [3]float32{1, 1, 1}, [3]float32{})
	return t
}

// decodeDepth min-max normalises the inverse depth and resizes it to w x h.
func decodeDepth(out []inference.Tensor, w, h int) (*Depth, error) {
	if len(out) < 1 || len(out[0].Data) < depthW*depthH {
		return nil, fmt.Errorf("depth: unexpected output")
	}
	src := out[0].Data[:depthW*depthH]
	lo, hi := src[0], src[0]
	for _, v := range src {
		lo, hi = min(lo, v), max(hi, v)
	}
	norm := make([]float32, len(src))
	if hi > lo {
		k := 1 / (hi - lo)
		for i, v := range src {
			norm[i] = (v - lo) * k
		}
	}
	m := sampleRegion(floatMap{W: depthW, H: depthH, Data: norm}, 0, 0, depthW, depthH, w, h)
	return &Depth{W: w, H: h, Data: m.Data}, nil
}

// Depth runs the optional tcmonodepth_small model. When it is not installed
// the error names the model.
func (s *Suite) Depth(ctx context.Context, img image.Image) (*Depth, error) {
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	if !s.Has(ModelDepth) {
		return nil, fmt.Errorf("depth: optional model %s is not installed in %s (it is optional; copy it from the model mirror with `make setup-models`)", ModelDepth, s.repo.Dir())
	}
	m, err := s.model(ctx, ModelDepth)
	if err != nil {
		return nil, err
	}
	out, err := m.Run(ctx, []inference.Tensor{prepareDepth(img)})
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	return decodeDepth(out, b.Dx(), b.Dy())
}
