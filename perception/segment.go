package perception

import (
	"context"
	"fmt"
	"image"

	"fashiond/inference"
)

// ModelSelfie is the person segmentation graph.
const ModelSelfie = "selfie_segmentation"

const selfieSize = 256

func prepareSelfie(img image.Image) inference.Tensor {
	t := inference.Tensor{Shape: []int64{1, selfieSize, selfieSize, 3}, Data: make([]float32, selfieSize*selfieSize*3)}
	packNHWC(t.Data, resizeLinear(img, selfieSize, selfieSize), 1.0/255, 0)
	return t
}

func decodeSelfie(out []inference.Tensor, w, h int) (*image.Gray, error) {
	if len(out) < 1 || len(out[0].Data) < selfieSize*selfieSize {
		return nil, fmt.Errorf("person mask: unexpected output")
	}
	m := floatMap{W: selfieSize, H: selfieSize, Data: out[0].Data[:selfieSize*selfieSize]}
	return sampleRegion(m, 0, 0, selfieSize, selfieSize, w, h).toGray(), nil
}

// PersonMask runs the selfie segmentation model (plain resize to 256x256)
// and returns the person probability (0..255) at the input resolution.
func (s *Suite) PersonMask(ctx context.Context, img image.Image) (*image.Gray, error) {
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("person mask: %w", err)
	}
	m, err := s.model(ctx, ModelSelfie)
	if err != nil {
		return nil, err
	}
	out, err := m.Run(ctx, []inference.Tensor{prepareSelfie(img)})
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	return decodeSelfie(out, b.Dx(), b.Dy())
}
