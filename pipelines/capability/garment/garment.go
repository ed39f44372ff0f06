// Package garment analyses a garment photo: it segments the garment (a
// flat-lay or ghost-mannequin photo on a plain background by border colour
// statistics in Lab, or a garment worn by a person by the parsing model's
// clothes mask), finds its landmarks from the contour, decides whether it is
// a top, a bottom or a full-length garment, and measures its dominant
// colour. It also exports the colour difference CIEDE2000 and SSIM that the
// try-on tests (and others) use to judge results.
//
// Landmark names (image left/right = viewer side, as in the test data):
//
//	tops and full:  collar_center, left_neck, right_neck, left_shoulder,
//	                right_shoulder, left_underarm, right_underarm,
//	                left_sleeve_end, right_sleeve_end (cuff midpoints),
//	                left_cuff_outer, left_cuff_inner, right_cuff_outer,
//	                right_cuff_inner (cuff corners; sleeved tops only),
//	                left_hem, right_hem, hem_center
//	bottoms:        left_waist, right_waist, waist_center, crotch,
//	                left_hem_center, right_hem_center, left/right_hem_outer,
//	                left/right_hem_inner (trousers); skirts have left_hem,
//	                right_hem, hem_center instead of crotch and legs.
//
// A worn garment (Garment.Worn) gets the top landmarks from the wearer's
// pose: shoulders at the clothes' top above the shoulder joints, sleeve
// ends where the clothes stop along the arms, the hem at their bottom.
package garment

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"slices"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Kinds of garment.
const (
	KindTop    = "top"
	KindBottom = "bottom"
	KindFull   = "full"
)

// Garment is the analysis of one garment image.
type Garment struct {
	// Kind is "top", "bottom" or "full" (a dress or jumpsuit).
	Kind string
	// Mask is the garment's binary mask at the image's size (255 = garment).
	Mask *image.Gray
	// Cutout is the garment image with alpha = a slightly feathered mask.
	Cutout *image.NRGBA
	// Landmarks in image pixels; see the package documentation for names.
	Landmarks map[string]perception.Point
	// Dominant is the per-channel median colour inside the mask.
	Dominant color.RGBA
	// BBox is the mask's bounding box.
	BBox image.Rectangle
	// Worn is true when the garment was segmented from a person wearing it.
	Worn bool
	// Sleeves says whether a top has sleeves that reach out from the body,
	// and Trousers whether a bottom has two legs.
	Sleeves, Trousers bool
}

// ErrNoGarment is returned (wrapped) when no garment can be found.
var ErrNoGarment = errors.New("no garment found")

// Analyze segments the garment in img and measures it. With p, a photo
// showing a person (person mask over 5% of the image and a face) is treated
// as a garment worn by someone: the parsing model's clothes above the hips.
// Otherwise the background must be plain. p may be nil for plain-background
// product photos.
func Analyze(ctx context.Context, p perception.Perception, img image.Image) (*Garment, error) {
	rgba := raster.RGBA(img)
	w, h := rgba.Rect.Dx(), rgba.Rect.Dy()
	if w < 32 || h < 32 {
		return nil, fmt.Errorf("%w: the garment image is too small (%dx%d)", ErrNoGarment, w, h)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lab := labImage(rgba)
	bg, plain := borderStats(lab, w, h)
	var m, raw *image.Gray
	worn := false
	// A person in the photo (even on a plain studio background) wears the
	// garment: take it from the parsing's clothes instead.
	person := false
	if p != nil {
		var err error
		if person, err = hasPerson(ctx, p, rgba); err != nil {
			return nil, err
		}
	}
	if plain && !person {
		m, raw = segmentPlain(lab, w, h, bg)
	}
	if m == nil || mask.Count(m) < w*h/100 {
		if p == nil {
			return nil, fmt.Errorf("%w: the background is not plain and no person model is available", ErrNoGarment)
		}
		wm, err := segmentWorn(ctx, p, rgba)
		if err != nil {
			return nil, err
		}
		m, worn = wm, true
	}
	g := &Garment{Mask: m, BBox: mask.BBox(m), Worn: worn}
	if g.BBox.Dx() < 16 || g.BBox.Dy() < 16 {
		return nil, fmt.Errorf("%w: the segmented region is too small", ErrNoGarment)
	}
	g.Dominant = dominant(rgba, m)
	g.Cutout = cutout(rgba, m)
	if worn {
		if err := wornLandmarks(ctx, p, rgba, g); err != nil {
			return nil, err
		}
	} else {
		classifyAndLandmark(g, raw, lab, w)
	}
	return g, nil
}

func labImage(img *image.RGBA) []Lab {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := make([]Lab, w*h)
	cache := map[uint32]Lab{}
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			r, g, b := row[x*4], row[x*4+1], row[x*4+2]
			k := uint32(r)<<16 | uint32(g)<<8 | uint32(b)
			l, ok := cache[k]
			if !ok {
				l = ToLab(r, g, b)
				if len(cache) < 1<<18 {
					cache[k] = l
				}
			}
			out[y*w+x] = l
		}
	}
	return out
}

// bgModel is the background colour with its spread.
type bgModel struct {
	Lab
	spreadL, spreadC float64
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// borderStats measures the colour of a band along the image border and
// says whether it is plain (most of the band within a small Lab distance of
// its median).
func borderStats(lab []Lab, w, h int) (bgModel, bool) {
	b := max(3, min(w, h)/64)
	var ls, as, bs []float64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x >= b && x < w-b && y >= b && y < h-b {
				continue
			}
			c := lab[y*w+x]
			ls, as, bs = append(ls, c.L), append(as, c.A), append(bs, c.B)
		}
	}
	m := bgModel{Lab: Lab{median(ls), median(as), median(bs)}}
	dl := make([]float64, len(ls))
	dc := make([]float64, len(ls))
	near := 0
	for i := range ls {
		dl[i] = math.Abs(ls[i] - m.L)
		dc[i] = math.Hypot(as[i]-m.A, bs[i]-m.B)
		if math.Sqrt(dl[i]*dl[i]+dc[i]*dc[i]) < 10 {
			near++
		}
	}
	m.spreadL, m.spreadC = median(dl), median(dc)
	return m, float64(near) >= 0.8*float64(len(ls))
}

// segmentPlain separates the garment from a plain background: a pixel is
// background when its chroma is close to the border's and its lightness is
// close to it or darker in a neutral way (cast shadows); the rest is closed
// (bridging stripes that match the background), the largest component kept
// and holes filled.
func segmentPlain(lab []Lab, w, h int, bg bgModel) (m, raw *image.Gray) {
	tc := max(4, 4*bg.spreadC)
	tlUp := max(6, 4*bg.spreadL)
	for _, shadow := range []float64{28, 10} {
		m = image.NewGray(image.Rect(0, 0, w, h))
		for i, c := range lab {
			dc := math.Hypot(c.A-bg.A, c.B-bg.B)
			dl := c.L - bg.L
			isBg := dc < tc && dl < tlUp && dl > -shadow
			if !isBg {
				m.Pix[i] = 255
			}
		}
		diag := math.Hypot(float64(w), float64(h))
		m = mask.Open(m, 1.5)
		raw = m
		// Stripes that match the background are bridged; the radius stays
		// small so that armpits and the crotch keep their shape.
		m = mask.Largest(mask.Close(m, max(4, 8*diag/1448)))
		m = dropWedges(m, raw, int(300*(diag/1448)*(diag/1448)))
		m = mask.FillHoles(m)
		if mask.Count(m) >= w*h/100 {
			return m, raw
		}
	}
	return nil, nil
}

// segmentWorn takes the clothes of a person wearing the garment: the
// parsing model's clothes channel where it beats skin and hair, inside the
// person mask, above the hips' line when the person shows legs (the upper
// garment); the largest component.
func segmentWorn(ctx context.Context, p perception.Perception, img *image.RGBA) (*image.Gray, error) {
	pose, err := p.Pose(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("garment: pose: %w", err)
	}
	if pose.Presence < 0.5 {
		return nil, fmt.Errorf("%w: the background is not plain and no person wearing a garment was detected", ErrNoGarment)
	}
	parse, err := p.Parse(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("garment: parsing: %w", err)
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	m := image.NewGray(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		c, s, hr := parse.Clothes.Pix[i], parse.Skin.Pix[i], parse.Hair.Pix[i]
		if c >= 128 && c >= s && c >= hr {
			m.Pix[i] = 255
		}
	}
	kp := pose.Keypoints
	hipY := (kp[perception.KpLeftHip].Y + kp[perception.KpRightHip].Y) / 2
	shY := (kp[perception.KpLeftShoulder].Y + kp[perception.KpRightShoulder].Y) / 2
	// Hips closer to the shoulders than the shoulders' width are misplaced
	// (a frontal adult's torso is about 1.45 shoulder widths long).
	if sw := math.Abs(kp[perception.KpLeftShoulder].X - kp[perception.KpRightShoulder].X); hipY-shY < 1.05*sw {
		hipY = shY + 1.45*sw
	}
	if hipY > shY && hipY < float64(h) {
		cut := int(hipY + 0.08*(hipY-shY))
		for y := max(cut, 0); y < h; y++ {
			for x := 0; x < w; x++ {
				m.Pix[y*w+x] = 0
			}
		}
	}
	m = mask.FillHoles(mask.Largest(mask.Open(m, 2)))
	if mask.Count(m) < w*h/200 {
		return nil, fmt.Errorf("%w: the person in the garment image shows no clothes region", ErrNoGarment)
	}
	return m, nil
}

func dominant(img *image.RGBA, m *image.Gray) color.RGBA {
	core := mask.Erode(m, 3)
	if mask.Count(core) < 50 {
		core = m
	}
	var hr, hg, hb [256]int
	n := 0
	w := img.Rect.Dx()
	for i, v := range core.Pix {
		if v < 128 {
			continue
		}
		x, y := i%w, i/w
		o := y*img.Stride + x*4
		hr[img.Pix[o]]++
		hg[img.Pix[o+1]]++
		hb[img.Pix[o+2]]++
		n++
	}
	med := func(hist *[256]int) uint8 {
		s := 0
		for v, c := range hist {
			s += c
			if 2*s > n {
				return uint8(v)
			}
		}
		return 255
	}
	return color.RGBA{med(&hr), med(&hg), med(&hb), 255}
}

func cutout(img *image.RGBA, m *image.Gray) *image.NRGBA {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	// The outermost pixels mix with the background: drop them and feather.
	a := mask.Feather(mask.Erode(m, 1.5), 0.8)
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := y*img.Stride + x*4
			q := y*out.Stride + x*4
			copy(out.Pix[q:q+3], img.Pix[o:o+3])
			out.Pix[q+3] = a.Pix[y*w+x]
		}
	}
	return out
}

// dropWedges removes the small pieces the closing added on the outline
// (the wedges it fills in sharp concave corners such as armpits), keeping
// the large ones (stripes that match the background) and inner ones.
func dropWedges(closed, raw *image.Gray, maxArea int) *image.Gray {
	w, h := closed.Rect.Dx(), closed.Rect.Dy()
	diff := image.NewGray(closed.Rect)
	for i, v := range closed.Pix {
		if v >= 128 && raw.Pix[i] < 128 {
			diff.Pix[i] = 255
		}
	}
	lab, sizes := mask.Components(diff)
	touches := make([]bool, len(sizes))
	for i, l := range lab {
		if l == 0 || sizes[l] >= maxArea {
			continue
		}
		x, y := i%w, i/w
		for _, j := range [4]int{i - 1, i + 1, i - w, i + w} {
			if (j == i-1 && x == 0) || (j == i+1 && x == w-1) || j < 0 || j >= w*h {
				touches[l] = true
				continue
			}
			if closed.Pix[j] < 128 {
				touches[l] = true
			}
		}
		_ = y
	}
	out := image.NewGray(closed.Rect)
	copy(out.Pix, closed.Pix)
	for i, l := range lab {
		if l != 0 && sizes[l] < maxArea && touches[l] {
			out.Pix[i] = 0
		}
	}
	return out
}

// hasPerson reports whether img shows a person: the person mask covers more
// than 5% of it and a face is found.
func hasPerson(ctx context.Context, p perception.Perception, img *image.RGBA) (bool, error) {
	pm, err := p.PersonMask(ctx, img)
	if err != nil {
		return false, fmt.Errorf("garment: person mask: %w", err)
	}
	if mask.Count(mask.Binary(pm, 128)) < len(pm.Pix)/20 {
		return false, nil
	}
	faces, err := p.Faces(ctx, img)
	if err != nil {
		return false, fmt.Errorf("garment: faces: %w", err)
	}
	return len(faces) > 0, nil
}
