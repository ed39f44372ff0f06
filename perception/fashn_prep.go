package perception

import (
	"context"
	"fmt"
	"image"
	"image/draw"
	"math"

	"github.com/disintegration/imaging"
)

// FASHN VTON's engine-side preprocessing (its pipeline.py): photos pre-
// resized to fit 864×864 (never up), DWPose run on them, pose maps drawn
// at that size, then everything resize-padded to the model's 576×864 (pose
// maps with nearest-exact, photos with area/Lanczos) and scaled to [-1, 1].

// FashnFit is ResizePad's geometry: the image scaled to W×H and centred in
// TW×TH with Left/Top/Right/Bottom black margins.
type FashnFit struct {
	W, H, TW, TH             int
	Left, Top, Right, Bottom int
}

// fashnFit is AspectPreserveResize("fit") + PadToShape: scale
// min(TW/w, TH/h), sizes int(scale·side), padding split with the odd pixel
// on the right and bottom.
func fashnFit(w, h, tw, th int) FashnFit {
	s := math.Min(float64(tw)/float64(w), float64(th)/float64(h))
	f := FashnFit{W: w, H: h, TW: tw, TH: th}
	if s != 1 {
		f.W, f.H = int(s*float64(w)), int(s*float64(h))
	}
	pw, ph := max(tw-f.W, 0), max(th-f.H, 0)
	f.Left, f.Top = pw/2, ph/2
	f.Right, f.Bottom = pw-f.Left, ph-f.Top
	return f
}

// fashnPreSize is the pipeline's pre-resize to fit side×side, never
// enlarging.
func fashnPreSize(w, h, side int) (int, int) {
	s := math.Min(float64(side)/float64(w), float64(side)/float64(h))
	if s >= 1 {
		return w, h
	}
	return int(s * float64(w)), int(s * float64(h))
}

// resizeNearestExact is cv2.INTER_NEAREST_EXACT on a grey image: source
// pixel (ifx·x + ifx0) >> 16 with ifx = src/dst in 16-bit fixed point and
// pixel centres aligned.
func resizeNearestExact(src *image.Gray, w, h int) *image.Gray {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	ifx := ((sw << 16) + w/2) / w
	ifx0 := ifx/2 - sw%2
	ify := ((sh << 16) + h/2) / h
	ify0 := ify/2 - sh%2
	out := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		sy := min((ify*y+ify0)>>16, sh-1)
		row := src.Pix[sy*src.Stride:]
		for x := range w {
			sx := min((ifx*x+ifx0)>>16, sw-1)
			out.Pix[y*w+x] = row[sx]
		}
	}
	return out
}

// padPlanes places planes c×f.W×f.H into c×TW×TH at (Left, Top), black
// (−1 after scaling) elsewhere, scaled v/127.5 − 1.
func padPlanes(get func(x, y, c int) uint8, c int, f FashnFit) []float32 {
	n := f.TW * f.TH
	out := make([]float32, c*n)
	for i := range out {
		out[i] = -1
	}
	for y := range f.H {
		for x := range f.W {
			for k := range c {
				out[k*n+(y+f.Top)*f.TW+x+f.Left] = float32(get(x, y, k))/127.5 - 1
			}
		}
	}
	return out
}

// FashnRGB resize-pads an RGB photo into the model's size and scales it to
// [-1, 1] (3 planes): shrinking with OpenCV's INTER_AREA rules (as the
// reference); enlarging with the imaging library's Lanczos (the reference
// uses cv2 LANCZOS4: close, not bit for bit).
func FashnRGB(img image.Image, tw, th int) ([]float32, FashnFit) {
	b := img.Bounds()
	f := fashnFit(b.Dx(), b.Dy(), tw, th)
	var rs *image.NRGBA
	switch {
	case f.W == b.Dx() && f.H == b.Dy():
		rs = imaging.Clone(img)
	case f.W < b.Dx():
		rs = resizeAreaCV(img, f.W, f.H)
	default:
		rs = imaging.Resize(img, f.W, f.H, imaging.Lanczos)
	}
	get := func(x, y, c int) uint8 { return rs.Pix[y*rs.Stride+4*x+c] }
	return padPlanes(get, 3, f), f
}

// FashnPoseMap resize-pads a pose map (nearest exact) into one [-1, 1]
// plane.
func FashnPoseMap(g *image.Gray, tw, th int) []float32 {
	f := fashnFit(g.Rect.Dx(), g.Rect.Dy(), tw, th)
	rs := g
	if f.W != g.Rect.Dx() || f.H != g.Rect.Dy() {
		rs = resizeNearestExact(g, f.W, f.H)
	}
	get := func(x, y, _ int) uint8 { return rs.Pix[y*rs.Stride+x] }
	return padPlanes(get, 1, f)
}

// FashnUnpad crops a model-size output back to the fitted image (the
// reference's unpad).
func FashnUnpad(img *image.NRGBA, f FashnFit) *image.NRGBA {
	r := image.Rect(f.Left, f.Top, f.TW-f.Right, f.TH-f.Bottom)
	out := image.NewNRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(out, out.Rect, img, r.Min, draw.Src)
	return out
}

// PoseSource finds a person's pose as DWposeDetector's dictionary.
type PoseSource interface {
	Detect(ctx context.Context, img image.Image) (PoseDict, error)
}

// FashnInputs are FASHN VTON's conditioning planes at the model's size.
type FashnInputs struct {
	Person, Garment         []float32 // 3×TH×TW in [-1, 1]
	PersonPose, GarmentPose []float32 // 1×TH×TW in [-1, 1]
	// PersonFit maps the model's output back onto the pre-resized person
	// (FashnUnpad), PersonSize is the pre-resized person's size.
	PersonFit  FashnFit
	PersonSize image.Point
}

// fashnPreSide is the pre-resize target (the model's longer side).
func fashnPreSide(tw, th int) int { return max(tw, th) }

// PrepareFashn builds the inputs for a person photo and a garment photo:
// pre-resize (Pillow's LANCZOS, never enlarging), poses (the garment's is the
// flat-lay dummy when flatLay), pose maps, resize-pad and scaling. The
// person photo is not masked (the reference's segmentation-free mode).
func PrepareFashn(ctx context.Context, poses PoseSource, person, garment image.Image, flatLay bool, tw, th int) (*FashnInputs, error) {
	if poses == nil {
		return nil, fmt.Errorf("fashn: no pose source")
	}
	side := fashnPreSide(tw, th)
	pre := func(img image.Image) image.Image {
		b := img.Bounds()
		w, h := fashnPreSize(b.Dx(), b.Dy(), side)
		if w == b.Dx() && h == b.Dy() {
			return img
		}
		return resizePILLanczos(img, w, h)
	}
	p, g := pre(person), pre(garment)
	pp, err := poses.Detect(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("fashn: person pose: %w", err)
	}
	gp := DummyPose()
	if !flatLay {
		if gp, err = poses.Detect(ctx, g); err != nil {
			return nil, fmt.Errorf("fashn: garment pose: %w", err)
		}
	}
	pb, gb := p.Bounds(), g.Bounds()
	pmap, err := DrawPoseGray(pp, pb.Dx(), pb.Dy())
	if err != nil {
		return nil, err
	}
	gmap, err := DrawPoseGray(gp, gb.Dx(), gb.Dy())
	if err != nil {
		return nil, err
	}
	in := &FashnInputs{PersonSize: pb.Size()}
	in.Person, in.PersonFit = FashnRGB(p, tw, th)
	in.Garment, _ = FashnRGB(g, tw, th)
	in.PersonPose = FashnPoseMap(pmap, tw, th)
	in.GarmentPose = FashnPoseMap(gmap, tw, th)
	return in, nil
}
