package style

import (
	"context"
	"fmt"
	"image"

	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
)

// SubjectMask is the person mask Options.PersonMask expects, fused from
// two models: the selfie segmentation (good on heads and torsos, soft on
// legs) and the pose model's own mask (good on limbs, noisy on busy
// backgrounds). Their average is pushed through a smooth step so that
// what both agree on is solid and what only one weakly sees is dropped.
// The mask has img's size (origin 0,0).
func SubjectMask(ctx context.Context, p perception.Perception, img image.Image) (*image.Gray, error) {
	sel, err := p.PersonMask(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("person mask: %w", err)
	}
	pose, err := p.Pose(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("pose: %w", err)
	}
	return fuseMasks(sel, pose.Mask, img.Bounds().Dx(), img.Bounds().Dy()), nil
}

// fuseMasks averages the available masks (resampled to w x h) and applies
// smoothstep(0.3, 0.7).
func fuseMasks(a, b *image.Gray, w, h int) *image.Gray {
	pa, pb := raster.MaskPlane(a, w, h), raster.MaskPlane(b, w, h)
	out := image.NewGray(image.Rect(0, 0, w, h))
	for i := range out.Pix {
		var v float32
		switch {
		case pa != nil && pb != nil:
			v = (pa.P[i] + pb.P[i]) / 2
		case pa != nil:
			v = pa.P[i]
		case pb != nil:
			v = pb.P[i]
		}
		out.Pix[i] = uint8(raster.Smoothstep(0.3, 0.7, v)*255 + 0.5)
	}
	return out
}
