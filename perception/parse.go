package perception

import (
	"context"
	"fmt"
	"image"

	"fashiond/inference"
)

// ModelParse is the skin/clothes/hair graph.
const ModelParse = "skin_clothes_hair_pan"

const parseSize = 512

var (
	imagenetScale = [3]float32{1 / (255 * 0.229), 1 / (255 * 0.224), 1 / (255 * 0.225)}
	imagenetShift = [3]float32{-0.485 / 0.229, -0.456 / 0.224, -0.406 / 0.225}
)

func prepareParse(img image.Image) inference.Tensor {
	t := inference.Tensor{Shape: []int64{1, 3, parseSize, parseSize}, Data: make([]float32, 3*parseSize*parseSize)}
	packNCHW(t.Data, resizeLinear(img, parseSize, parseSize), [3]int{0, 1, 2}, imagenetScale, imagenetShift)
	return t
}

func decodeParse(out []inference.Tensor, w, h int) (*Parsing, error) {
	const n = parseSize * parseSize
	if len(out) < 1 || len(out[0].Data) < 3*n {
		return nil, fmt.Errorf("parse: unexpected output")
	}
	up := func(c int) *image.Gray {
		return sampleRegion(channel(out[0].Data, c, parseSize, parseSize), 0, 0, parseSize, parseSize, w, h).toGray()
	}
	return &Parsing{Skin: up(0), Clothes: up(1), Hair: up(2)}, nil
}

// Parse runs the skin/clothes/hair model (512x512, ImageNet normalisation)
// and returns the three probability masks at the input resolution
// (bilinear upsampling).
func (s *Suite) Parse(ctx context.Context, img image.Image) (*Parsing, error) {
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	m, err := s.model(ctx, ModelParse)
	if err != nil {
		return nil, err
	}
	out, err := m.Run(ctx, []inference.Tensor{prepareParse(img)})
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	return decodeParse(out, b.Dx(), b.Dy())
}
