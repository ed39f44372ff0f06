package generative

import (
	"context"
	"fmt"
	"image"
	"image/color"

	"github.com/disintegration/imaging"

	"fashiond/diffusion"
)

// DefaultRefineStrength is a Refiner's strength when a Prompt leaves it at
// zero: the layout and colours of the input hold, texture is redrawn.
const DefaultRefineStrength = 0.35

// Refiner redraws an image at a strength below 1 (img2img): the starting
// latents are the image's own, noised to the strength, so the layout,
// colours and pose hold while texture, seams and lighting are re-rendered.
// region (white >= 128) limits the result: outside it the image's own
// pixels come back exactly (a narrow feather inside it); a nil region
// redraws the whole image.
type Refiner interface {
	Refine(ctx context.Context, img image.Image, region *image.Gray, p Prompt) (*image.NRGBA, Info, error)
	// Model names the installed model.
	Model() string
}

// Img2Img is a Refiner backed by an installed model of either role:
//   - a text-to-image model (4-channel UNet) runs the engine's img2img
//     (an image and no mask) at the strength, on the whole image scaled
//     to the model's working size; the region is then composited back;
//   - an inpainting model (9-channel UNet, which needs a mask) runs
//     inpainting at the strength with the region as its mask (the whole
//     image when region is nil): the masked part starts from the image's
//     noised latents, not from noise, so it is a refinement as well.
type Img2Img struct {
	m *diffusion.Model
}

// Model is the wrapped model's name.
func (r *Img2Img) Model() string { return r.m.Name() }

// Refine implements Refiner. p.Strength 0 is DefaultRefineStrength; a
// strength outside (0, 1) is an error (1 would discard the image).
func (r *Img2Img) Refine(ctx context.Context, img image.Image, region *image.Gray, p Prompt) (*image.NRGBA, Info, error) {
	b := img.Bounds()
	if region != nil && region.Bounds().Size() != b.Size() {
		return nil, Info{}, fmt.Errorf("generative: region %v and image %v differ in size", region.Bounds().Size(), b.Size())
	}
	if p.Strength == 0 {
		p.Strength = DefaultRefineStrength
	}
	if !(p.Strength > 0 && p.Strength < 1) {
		return nil, Info{}, fmt.Errorf("generative: refine strength %v must be in (0, 1)", p.Strength)
	}
	full := region
	if full == nil {
		full = fullMask(b.Dx(), b.Dy())
	}
	w, h := workSize(b.Dx(), b.Dy(), r.m.DefaultSize())
	req := diffusion.Request{Prompt: p.Text, NegativePrompt: p.Negative, Seed: p.Seed, Steps: p.Steps,
		Guidance: p.Guidance, Strength: p.Strength, Width: w, Height: h, Progress: p.Progress,
		Image: imaging.Resize(img, w, h, imaging.Lanczos)}
	if r.m.Task() == diffusion.Inpainting {
		req.Mask = imaging.Resize(full, w, h, imaging.Box)
	}
	if req.Steps == 0 {
		req.Steps = DefaultSteps
	}
	if req.Guidance == 0 {
		req.Guidance = DefaultGuidance
	}
	res, err := r.m.Generate(ctx, req)
	if err != nil {
		return nil, Info{}, fmt.Errorf("generative: %w", err)
	}
	gen := imaging.Resize(res.Image, b.Dx(), b.Dy(), imaging.Lanczos)
	info := Info{Model: r.m.Name(), Task: r.m.Task(), Method: res.Method, Steps: req.Steps, Seed: res.Seed,
		Guidance: req.Guidance, Strength: p.Strength, Prompt: p.Text}
	if region == nil {
		return gen, info, nil
	}
	return Composite(img, gen, region), info, nil
}

// fullMask is an all-white w×h mask.
func fullMask(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = 255
	}
	return m
}

// basicColours name a region's dominant colour in a prompt.
var basicColours = []struct {
	name string
	c    [3]int
}{
	{"white", [3]int{240, 240, 240}}, {"black", [3]int{20, 20, 20}}, {"grey", [3]int{128, 128, 128}},
	{"red", [3]int{200, 30, 30}}, {"orange", [3]int{240, 140, 30}}, {"yellow", [3]int{235, 215, 50}},
	{"green", [3]int{40, 150, 60}}, {"blue", [3]int{40, 80, 200}}, {"navy", [3]int{25, 35, 80}},
	{"purple", [3]int{120, 50, 150}}, {"pink", [3]int{240, 150, 180}}, {"brown", [3]int{120, 80, 45}},
	{"beige", [3]int{215, 195, 160}},
}

// ColourWord is the nearest of 13 basic colour names (RGB distance), for
// prompts that describe what an image shows.
func ColourWord(c color.RGBA) string {
	best, bestD := "", -1
	for _, b := range basicColours {
		dr, dg, db := int(c.R)-b.c[0], int(c.G)-b.c[1], int(c.B)-b.c[2]
		if d := dr*dr + dg*dg + db*db; bestD < 0 || d < bestD {
			best, bestD = b.name, d
		}
	}
	return best
}

// Refiner is the inpainting model behind d as a Refiner.
func (d *Diffusion) Refiner() *Img2Img { return &Img2Img{m: d.m} }

// Refiner is the text-to-image model behind t as a Refiner (img2img).
func (t *TextToImage) Refiner() *Img2Img { return &Img2Img{m: t.m} }
