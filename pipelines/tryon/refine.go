package tryon

import (
	"context"
	"fmt"
	"image"
	"image/draw"

	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/transfer"
)

// The generative refinement of a classical transfer: the warped garment's
// region is inpainted at a low strength, so seams, drape and lighting are
// re-rendered while the garment's colour and layout stay the warp's. The
// strength and steps follow accuracy.
var refineByAccuracy = map[string]struct {
	steps    int
	strength float64
}{
	transfer.AccuracyStandard: {15, 0.3},
	transfer.AccuracyHigh:     {25, 0.4},
	transfer.AccuracyHyper:    {35, 0.5},
}

const (
	refineNegative = "deformed, blurry, text, watermark, extra limbs, cartoon"
	// refineGrowPx grows the garment layer so its seams are refined too.
	refineGrowPx = 3
)

// refinePrompt describes the garment from its analysis.
func refinePrompt(g *garment.Garment) string {
	noun := map[string]string{garment.KindTop: "top", garment.KindBottom: "trousers", garment.KindFull: "dress"}[g.Kind]
	switch {
	case g.Kind == garment.KindTop && g.Sleeves:
		noun = "top with sleeves"
	case g.Kind == garment.KindBottom && !g.Trousers:
		noun = "skirt"
	}
	article := "a "
	if noun == "trousers" {
		article = ""
	}
	return fmt.Sprintf("a fashion photo of a person wearing %s%s %s, realistic fabric, natural folds and seams, matching the photo's lighting", article, generative.ColourWord(g.Dominant), noun)
}

// refine inpaints the transferred garment's region of out (the subject's
// crop) at the accuracy's strength.
func refine(ctx context.Context, inp generative.Inpainter, out *image.RGBA, layer *image.Gray, g *garment.Garment, accuracy string, seed int64) (*image.RGBA, generative.Info, error) {
	r := refineByAccuracy[accuracy]
	m := mask.Dilate(mask.Binary(layer, 128), refineGrowPx)
	res, info, err := inp.Inpaint(ctx, out, m, generative.Prompt{
		Text: refinePrompt(g), Negative: refineNegative, Seed: uint64(seed), Steps: r.steps, Strength: r.strength,
	})
	if err != nil {
		return nil, info, err
	}
	rgba := image.NewRGBA(res.Rect)
	draw.Draw(rgba, rgba.Rect, res, res.Rect.Min, draw.Src)
	return rgba, info, nil
}
