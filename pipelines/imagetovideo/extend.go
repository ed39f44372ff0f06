package imagetovideo

import (
	"context"
	"image"
	"image/draw"

	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/scene"
)

// The prompt of the generative background extension: the region beyond the
// photo's edges is the same scene continued, never a new subject.
const (
	extendPrompt   = "the same background continued beyond the edges of the photo, same place, same lighting, photographic, seamless"
	extendNegative = "person, people, face, body, text, watermark, frame, border, blurry"
)

// generativeExtend returns an extender that paints the canvas beyond the
// background plate with inp (the mirrored classical extension is its
// starting point); the plate itself stays pixel-identical. info receives
// how the extension was made, and is left nil when the plate covers the
// canvas and nothing had to be generated.
func generativeExtend(ctx context.Context, inp generative.Inpainter, seed uint64, progress func(done, total int), info **generative.Info) extender {
	return func(bg *image.RGBA, w, h int, at image.Point) (*image.RGBA, error) {
		base := scene.ExtendAt(bg, w, h, at)
		inside := image.Rect(at.X, at.Y, at.X+bg.Rect.Dx(), at.Y+bg.Rect.Dy()).Intersect(base.Rect)
		if inside == base.Rect {
			return base, nil
		}
		mask := image.NewGray(base.Rect)
		for i := range mask.Pix {
			mask.Pix[i] = 255
		}
		draw.Draw(mask, inside, image.Black, image.Point{}, draw.Src)
		out, in, err := inp.Inpaint(ctx, base, mask, generative.Prompt{Text: extendPrompt, Negative: extendNegative, Seed: seed, Progress: progress})
		if err != nil {
			return nil, err
		}
		*info = &in
		res := image.NewRGBA(out.Rect)
		draw.Draw(res, res.Rect, out, out.Rect.Min, draw.Src)
		return res, nil
	}
}
