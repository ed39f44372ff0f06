package posecontrol

import (
	"context"
	"image"
	"image/draw"
	"math"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
)

// The generative stage: with an installed inpainting model, the background
// the person uncovered by moving (where the person was and no longer is,
// outside the re-posed body's closed outline) is inpainted instead of the
// classical plate fill; the re-posed person is kept as it is. Gaps inside
// the body's outline are not repainted: the largest_tear check still
// measures them. A hole wider than the closing that the body encloses is
// repainted as background, and the largest_torn_hole check, which reads
// the masks, not the colours, still fails it.
const (
	disoccPrompt   = "the empty background behind a person, continued seamlessly: the same place, surfaces and lighting, photographic"
	disoccNegative = "person, people, body, arm, hand, leg, face, ghost, shadow of a person, blurry, text, watermark"
	// bodyMarginFrac keeps this share of the image diagonal around the
	// re-posed body out of the mask, so its edge is not repainted.
	bodyMarginFrac = 0.004
	// outlineCloseFrac closes the re-posed body's outline (as the tear
	// check does) so gaps between limbs and torso are not background.
	outlineCloseFrac = 0.02
)

// WithInpainter makes the pipeline inpaint the uncovered background with
// an installed inpainting model (nil keeps the reference plate fill).
func (pl *Pipeline) WithInpainter(inp generative.Inpainter) *Pipeline {
	pl.inp = inp
	return pl
}

// GenerativeModels implements pipelines.GenerativeUser.
func (pl *Pipeline) GenerativeModels() []string {
	if pl.inp == nil {
		return nil
	}
	return []string{pl.inp.Model()}
}

// disocclusion is the uncovered background: was on, the re-posed body
// (closed, with a margin) off.
func disocclusion(was, alpha *image.Gray) *image.Gray {
	w, h := alpha.Rect.Dx(), alpha.Rect.Dy()
	diag := math.Hypot(float64(w), float64(h))
	body := mask.Dilate(mask.Close(mask.Binary(alpha, 128), outlineCloseFrac*diag), bodyMarginFrac*diag)
	out := image.NewGray(alpha.Rect)
	for i := range out.Pix {
		if was.Pix[i] >= 128 && body.Pix[i] < 128 {
			out.Pix[i] = 255
		}
	}
	return out
}

// fillDisocclusion inpaints the uncovered background of a re-posed image.
// ok is false when nothing was uncovered.
func (pl *Pipeline) fillDisocclusion(ctx context.Context, img *image.RGBA, was, alpha *image.Gray, pose string, step func(done, total int)) (*image.RGBA, generative.Info, bool, error) {
	m := disocclusion(was, alpha)
	if mask.Count(m) == 0 {
		return img, generative.Info{}, false, nil
	}
	out, info, err := pl.inp.Inpaint(ctx, img, m, generative.Prompt{Text: disoccPrompt, Negative: disoccNegative, Seed: pipelines.Seed(pose), Progress: step})
	if err != nil {
		return nil, info, false, err
	}
	res := image.NewRGBA(out.Rect)
	draw.Draw(res, res.Rect, out, out.Rect.Min, draw.Src)
	return res, info, true, nil
}
