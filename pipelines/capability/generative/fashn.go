package generative

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"

	"github.com/disintegration/imaging"

	"fashiond/diffusion"
	"fashiond/diffusion/scheduler"
	"fashiond/perception"
)

// FashnMethod is the sampler a FASHN VTON output names.
const FashnMethod scheduler.Kind = "rectified-flow-euler"

// fashnGarmentGrey fills a worn garment photo outside the garment (the
// reference's create_garment_image mask value).
const fashnGarmentGrey = 127

// FashnVTON is a TryOner backed by an installed fashn-vton model: the
// garment photo and the person photo (unmasked, the reference's
// segmentation-free mode) with their pose maps go to the transformer; the
// output replaces the person inside the try-on region.
type FashnVTON struct {
	m     *diffusion.FashnModel
	poses perception.PoseSource
	// poseNote says which pose model drew the pose maps.
	poseNote string
}

// NewFashnVTON wraps a fashn-vton model with the pose source its maps are
// drawn from; poseNote names it in the output notes.
func NewFashnVTON(m *diffusion.FashnModel, poses perception.PoseSource, poseNote string) (*FashnVTON, error) {
	if m == nil || poses == nil {
		return nil, errors.New("generative: FASHN VTON needs a model and a pose source")
	}
	return &FashnVTON{m: m, poses: poses, poseNote: poseNote}, nil
}

// Model is the wrapped model's name.
func (f *FashnVTON) Model() string { return f.m.Name() }

// FashnCategory maps the garment analysis's kind to FASHN VTON's category
// (a dress or jumpsuit is one-pieces; an unknown kind is tops).
func FashnCategory(kind string) string {
	switch kind {
	case "bottom":
		return diffusion.CategoryBottoms
	case "full":
		return diffusion.CategoryOnePieces
	}
	return diffusion.CategoryTops
}

// TryOn implements TryOner: one sample with seed o.Seed, unpadded, scaled
// back to the person's size and composited inside mask.
func (f *FashnVTON) TryOn(ctx context.Context, person, garment image.Image, mask *image.Gray, o TryOnOptions) (*image.NRGBA, Info, error) {
	b := person.Bounds()
	if mask.Bounds().Size() != b.Size() {
		return nil, Info{}, fmt.Errorf("generative: mask %v and person %v differ in size", mask.Bounds().Size(), b.Size())
	}
	if o.GarmentMask != nil && !o.FlatLay {
		garment = cutOutGarment(garment, o.GarmentMask)
	}
	l := f.m.Layout()
	in, err := perception.PrepareFashn(ctx, f.poses, person, garment, o.FlatLay, l.Width, l.Height)
	if err != nil {
		return nil, Info{}, fmt.Errorf("generative: %w", err)
	}
	cat := FashnCategory(o.Kind)
	res, err := f.m.TryOn(ctx, diffusion.FashnRequest{Person: in.Person, Garment: in.Garment, PersonPose: in.PersonPose,
		GarmentPose: in.GarmentPose, Category: cat, Steps: o.Steps, Guidance: o.Guidance, Seed: o.Seed, Progress: o.Progress})
	if err != nil {
		return nil, Info{}, fmt.Errorf("generative: %w", err)
	}
	out := perception.FashnUnpad(diffusion.FashnImage(res.Samples[0], l.Width, l.Height), in.PersonFit)
	gen := imaging.Resize(out, b.Dx(), b.Dy(), imaging.Lanczos)
	info := Info{Model: f.m.Name(), Task: diffusion.TryOn, Method: FashnMethod, Steps: res.Steps, Seed: res.Seeds[0],
		Guidance: res.Guidance, Strength: 1}
	info.Detail = fashnNote(info, l, res, cat, o.FlatLay, f.poseNote)
	return Composite(person, gen, mask), info, nil
}

// fashnNote is the output note of a FASHN VTON try-on.
func fashnNote(i Info, l diffusion.FashnLayout, res *diffusion.FashnResult, cat string, flat bool, poseNote string) string {
	garmentPose := "the garment photo's pose"
	if flat {
		garmentPose = "the flat-lay dummy pose for the garment"
	}
	s := fmt.Sprintf("garment put on by the installed try-on model %q (FASHN VTON layout: a pixel-space flow transformer at %dx%d fed the unmasked person, the garment photo, "+
		"their pose maps (%s; %s) and category %s; %s %s, %d steps, guidance %g skipped on the last %d, seed %d)",
		i.Model, l.Width, l.Height, poseNote, garmentPose, cat, i.Method, res.Schedule, i.Steps, i.Guidance, res.SkipLast, i.Seed)
	if l.Weights == diffusion.WeightsRandom {
		s += "; the model has random weights (a test or benchmark export): the picture is noise-like and says nothing about quality"
	}
	return s
}

// cutOutGarment greys a worn garment photo outside its mask, looked up at
// the nearest mask pixel when the sizes differ (the reference cuts the
// garment out with a human parser under a non-commercial licence; fashiond
// uses its own clothes parsing through the garment analysis).
func cutOutGarment(img image.Image, m *image.Gray) image.Image {
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	mb := m.Bounds()
	for y := range b.Dy() {
		for x := range b.Dx() {
			mx, my := mb.Min.X+x*mb.Dx()/b.Dx(), mb.Min.Y+y*mb.Dy()/b.Dy()
			if m.GrayAt(mx, my).Y < 128 {
				out.SetNRGBA(x, y, color.NRGBA{fashnGarmentGrey, fashnGarmentGrey, fashnGarmentGrey, 255})
			}
		}
	}
	return out
}
