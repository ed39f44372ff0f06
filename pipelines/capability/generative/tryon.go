package generative

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"

	"github.com/disintegration/imaging"

	"fashiond/diffusion"
)

// TryOnOptions tune one try-on generation. Zero values take the model's
// fashiond.json defaults.
type TryOnOptions struct {
	Seed     uint64
	Steps    int
	Guidance float64
	// Progress reports UNet calls done out of the total; may be nil.
	Progress func(done, total int)
	// Kind is the garment's kind from the garment analysis ("top",
	// "bottom", "full"), FlatLay whether the garment photo shows no
	// wearer and GarmentMask (at the garment photo's size, may be nil) the
	// garment in a worn photo. Models that take a category, a garment pose
	// or a cut-out garment use them (FASHN VTON); CatVTON ignores them.
	Kind        string
	FlatLay     bool
	GarmentMask *image.Gray
}

// TryOner dresses the person of an image in a garment: it repaints the
// region of person where mask is white (>= 128) and returns an image of
// person's size whose pixels outside the mask are person's own.
type TryOner interface {
	TryOn(ctx context.Context, person, garment image.Image, mask *image.Gray, o TryOnOptions) (*image.NRGBA, Info, error)
	// Model names the installed model.
	Model() string
}

// CatVTON is a TryOner backed by an installed try-on model (a folder whose
// fashiond.json declares the catvton layout).
type CatVTON struct {
	m *diffusion.Model
}

// NewTryOn wraps a try-on model.
func NewTryOn(m *diffusion.Model) (*CatVTON, error) {
	if m.Task() != diffusion.TryOn {
		return nil, fmt.Errorf("generative: model %s is %s, not %s", m.Name(), m.Task(), diffusion.TryOn)
	}
	return &CatVTON{m: m}, nil
}

// Model is the wrapped model's name.
func (c *CatVTON) Model() string { return c.m.Name() }

// TryOn runs the model with the person scaled to fit the model's person
// size (aspect kept, sides multiples of 8) and the garment photo fitted
// into the same size on white (CatVTON's resize-and-pad), scales the
// result back and composites it inside the mask with a narrow feather.
func (c *CatVTON) TryOn(ctx context.Context, person, garment image.Image, mask *image.Gray, o TryOnOptions) (*image.NRGBA, Info, error) {
	b := person.Bounds()
	if mask.Bounds().Size() != b.Size() {
		return nil, Info{}, fmt.Errorf("generative: mask %v and person %v differ in size", mask.Bounds().Size(), b.Size())
	}
	l := c.m.Layout()
	w, h := TryOnSize(b.Dx(), b.Dy(), l.PersonWidth, l.PersonHeight)
	req := diffusion.TryOnRequest{
		Person: imaging.Resize(person, w, h, imaging.Lanczos), Garment: PadGarment(garment, w, h),
		Mask: imaging.Resize(mask, w, h, imaging.Box), Steps: o.Steps, Guidance: o.Guidance, Seed: o.Seed,
		Width: w, Height: h, Progress: o.Progress,
	}
	res, err := c.m.TryOn(ctx, req)
	if err != nil {
		return nil, Info{}, fmt.Errorf("generative: %w", err)
	}
	info := Info{Model: c.m.Name(), Task: diffusion.TryOn, Method: res.Method, Steps: o.Steps, Seed: res.Seed,
		Guidance: o.Guidance, Strength: 1}
	if info.Steps == 0 {
		info.Steps = l.Steps
	}
	if info.Guidance == 0 {
		info.Guidance = l.Guidance
	}
	gen := imaging.Resize(res.Image, b.Dx(), b.Dy(), imaging.Lanczos)
	return Composite(person, gen, mask), info, nil
}

// TryOnSize scales w×h to fit inside the model's person size mw×mh with
// the aspect kept, both sides multiples of 8 and at least 64.
func TryOnSize(w, h, mw, mh int) (int, int) {
	k := math.Min(float64(mw)/float64(w), float64(mh)/float64(h))
	round := func(v int, limit int) int { return min(limit, max(64, int(math.Round(float64(v)*k/8))*8)) }
	return round(w, mw), round(h, mh)
}

// PadGarment scales the garment photo to fit w×h with its aspect kept,
// centred on white (transparent pixels become white).
func PadGarment(img image.Image, w, h int) *image.NRGBA {
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(out, out.Rect, image.NewUniform(color.White), image.Point{}, draw.Src)
	b := img.Bounds()
	k := math.Min(float64(w)/float64(b.Dx()), float64(h)/float64(b.Dy()))
	fit := imaging.Resize(img, max(1, int(math.Round(float64(b.Dx())*k))), max(1, int(math.Round(float64(b.Dy())*k))), imaging.Lanczos)
	off := image.Pt((w-fit.Rect.Dx())/2, (h-fit.Rect.Dy())/2)
	draw.Draw(out, fit.Rect.Add(off), fit, fit.Rect.Min, draw.Over)
	return out
}

// TryOnNote is Info as one sentence for a try-on output's notes.
func (i Info) TryOnNote() string {
	if i.Detail != "" {
		return i.Detail
	}
	return fmt.Sprintf("garment put on by the installed %s model %q (CatVTON layout: person and garment photo side by side in latent space, no text prompt; %s, %d steps, guidance %g, seed %d)",
		i.Task, i.Model, i.Method, i.Steps, i.Guidance, i.Seed)
}
