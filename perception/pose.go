package perception

import (
	"context"
	"fmt"
	"image"

	"fashiond/inference"
)

// Model names of the pose graphs.
const (
	ModelPoseFull = "blazepose_full"
	ModelPoseLite = "blazepose_lite"
)

const poseSize = 256

// poseInput is the pre-processed pose input and how to map back.
type poseInput struct {
	tensor inference.Tensor
	// The image was resized to rw x rh and placed at (ox, oy) in the
	// 256 x 256 input: orig = (p - o) * W / rw.
	ox, oy, rw, rh int
	w, h           int
}

// preparePose pads to a square (centred, black) and resizes to 256: the
// resize happens first (to rw x rh) so that large photos are never copied
// at full size into a padded canvas.
func preparePose(img image.Image) poseInput {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	s := max(w, h)
	rw := max(1, int(float64(w)*poseSize/float64(s)+0.5))
	rh := max(1, int(float64(h)*poseSize/float64(s)+0.5))
	ox, oy := (poseSize-rw)/2, (poseSize-rh)/2
	canvas := padCanvas(resizeLinear(img, rw, rh), poseSize, poseSize, ox, oy)
	t := inference.Tensor{Shape: []int64{1, poseSize, poseSize, 3}, Data: make([]float32, poseSize*poseSize*3)}
	packNHWC(t.Data, canvas, 1.0/255, 0)
	return poseInput{tensor: t, ox: ox, oy: oy, rw: rw, rh: rh, w: w, h: h}
}

// decodePose turns the outputs (Identity, Identity_1, Identity_2) into a Pose
// in original image coordinates.
func decodePose(in poseInput, out []inference.Tensor) (*Pose, error) {
	if len(out) < 3 || len(out[0].Data) < 33*5 || len(out[1].Data) < 1 || len(out[2].Data) < poseSize*poseSize {
		return nil, fmt.Errorf("pose: unexpected outputs")
	}
	sx := float64(in.w) / float64(in.rw)
	sy := float64(in.h) / float64(in.rh)
	p := &Pose{Presence: sigmoid(float64(out[1].Data[0]))}
	lm := out[0].Data
	for i := range p.Keypoints {
		v := lm[i*5 : i*5+5]
		p.Keypoints[i] = Keypoint{
			X:          (float64(v[0]) - float64(in.ox)) * sx,
			Y:          (float64(v[1]) - float64(in.oy)) * sy,
			Z:          float64(v[2]) * sx,
			Visibility: sigmoid(float64(v[3])),
			Presence:   sigmoid(float64(v[4])),
		}
	}
	logits := out[2].Data[:poseSize*poseSize]
	prob := make([]float32, len(logits))
	for i, v := range logits {
		prob[i] = sigmoid32(v)
	}
	m := sampleRegion(floatMap{W: poseSize, H: poseSize, Data: prob},
		float64(in.ox), float64(in.oy), float64(in.ox+in.rw), float64(in.oy+in.rh), in.w, in.h)
	p.Mask = m.toGray()
	return p, nil
}

// Pose runs BlazePose (full, or lite when SuiteOptions.PoseModel is "lite").
func (s *Suite) Pose(ctx context.Context, img image.Image) (*Pose, error) {
	name := ModelPoseFull
	if s.opts.PoseModel == "lite" {
		name = ModelPoseLite
	}
	return s.PoseWith(ctx, img, name)
}

// PoseWith runs the named pose model (ModelPoseFull or ModelPoseLite).
func (s *Suite) PoseWith(ctx context.Context, img image.Image, model string) (*Pose, error) {
	if model != ModelPoseFull && model != ModelPoseLite {
		return nil, fmt.Errorf("pose: unknown model %q", model)
	}
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("pose: %w", err)
	}
	m, err := s.model(ctx, model)
	if err != nil {
		return nil, err
	}
	in := preparePose(img)
	out, err := m.Run(ctx, []inference.Tensor{in.tensor})
	if err != nil {
		return nil, err
	}
	return decodePose(in, out)
}

func checkImage(img image.Image) error {
	if img == nil {
		return fmt.Errorf("no image")
	}
	if b := img.Bounds(); b.Dx() < 1 || b.Dy() < 1 {
		return fmt.Errorf("empty image %dx%d", b.Dx(), b.Dy())
	}
	return nil
}
