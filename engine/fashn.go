package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/perception"
	"fashiond/pipelines/capability/generative"
)

// fashnPoseFallback is the pose note when DWPose is not installed.
const fashnPoseFallback = "drawn from BlazePose, body only: DWPose is not installed (`fashiond models install DIR` with yolox_l.onnx and dw-ll_ucoco_384.onnx)"

// openFashnRole opens the try-on role when the model chosen for it has the
// fashn-vton layout; ok is false for any other (or no) try-on model. The
// pose maps come from the installed DWPose, else from body (BlazePose,
// body only); with neither the role is an error.
func openFashnRole(ctx context.Context, rt *inference.Runtime, modelsDir, name string, opts diffusion.Options,
	body perception.BodyPoser, log *slog.Logger) (generative.TryOner, io.Closer, bool, error) {
	name, err := diffusion.Choose(ctx, modelsDir, diffusion.TryOn, name)
	if err != nil || name == "" {
		return nil, nil, false, err
	}
	layout, err := diffusion.LayoutOf(ctx, modelsDir, name)
	if err != nil || layout != diffusion.LayoutFashnVTON {
		return nil, nil, false, err
	}
	dw, err := perception.OpenDWPose(ctx, rt, modelsDir, opts.Device)
	if err != nil {
		return nil, nil, false, err
	}
	var poses perception.PoseSource = dw
	note := "drawn from DWPose"
	if dw == nil {
		if body == nil {
			return nil, nil, false, fmt.Errorf("try-on model %s (fashn-vton) needs a pose model: install DWPose (see docs/GENERATIVE.md)", name)
		}
		poses, note = perception.BlazePoseSource{P: body}, fashnPoseFallback
		log.Warn("FASHN VTON pose maps from BlazePose: DWPose is not installed", "model", name)
	}
	m, err := diffusion.OpenFashnVTON(ctx, rt, modelsDir, name, opts)
	if err != nil {
		return nil, nil, false, errors.Join(err, dw.Close())
	}
	ton, err := generative.NewFashnVTON(m, poses, note)
	if err != nil {
		return nil, nil, false, errors.Join(err, m.Close(), dw.Close())
	}
	log.Info("generative model in use", "role", diffusion.TryOn, "model", name, "layout", layout, "dtype", m.DType(), "device", m.Device(), "pose", note)
	return ton, closers{dw, m}, true, nil
}
