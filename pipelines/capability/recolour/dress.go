package recolour

import (
	"context"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"

	"fashiond/perception"
	"fashiond/pipelines/capability/raster"

	xdraw "golang.org/x/image/draw"
)

// Dress recolours and re-textures the garments of spec on the person in
// img, keeping the original shading and folds: each garment region's
// linear luminance relative to its median is the shading, and the new
// albedo (colour or pattern) is multiplied by it. seed 0 renders the spec
// exactly; other seeds vary the shade slightly (up to ±3.5 L*, ±5° hue,
// ±10% chroma) and the pattern's scale (±12%) and phase. The result has img's size, origin (0,0).
func Dress(ctx context.Context, p perception.Perception, img image.Image, spec Spec, seed int64) (*image.RGBA, error) {
	src := raster.CopyRGBA(img)
	r, err := FindRegions(ctx, p, src)
	if err != nil {
		return nil, err
	}
	return DressRegions(src, r, spec, seed)
}

// RegionError says a garment region is not in the photo.
type RegionError struct {
	Region string
	Area   float64 // fraction of the image the region covers
	// Marks is the fraction of the image that the clothes parser called
	// clothes and that are marks on bare skin (body paint, a tattoo, a
	// necklace), left alone (see markHalfWidth).
	Marks float64
}

func (e *RegionError) Error() string {
	what := map[string]string{RegionTop: "an upper-body garment", RegionBottom: "a lower-body garment (the photo may not show the legs)", RegionFull: "any clothing"}[e.Region]
	msg := fmt.Sprintf("prompt-tryon: found no %s region in the person image: %s covers %.2f%% of it", e.Region, what, e.Area*100)
	if e.Marks > 0 {
		worn := map[string]string{RegionTop: "top", RegionBottom: "trousers or skirt", RegionFull: "clothing"}[e.Region]
		msg += fmt.Sprintf("; the person wears no %s to recolour: what the clothes parser took for clothes (%.2f%% of the image) is paint or marks on bare skin, which is never recoloured. prompt-tryon changes the colour and pattern of the garments a person wears, it does not draw new ones on bare skin (an installed inpainting model repaints a worn garment's region only); use a photo of a person wearing one", worn, e.Marks*100)
	}
	return msg
}

// DressRegions renders spec over precomputed regions.
func DressRegions(src *image.RGBA, r *Regions, spec Spec, seed int64) (*image.RGBA, error) {
	if err := r.Check(spec); err != nil {
		return nil, err
	}
	out := raster.CopyRGBA(src)
	for _, g := range spec.Garments {
		paintGarment(out, src, r, r.alpha(g.Region), g, seed)
	}
	return out, nil
}

// minRegionArea is the smallest garment region (share of the image) that
// can be dressed; below it the region was not found.
const minRegionArea = 0.005

// alpha is the soft mask of a region name (nil for an unknown one).
func (r *Regions) alpha(region string) *raster.Plane {
	return map[string]*raster.Plane{RegionTop: r.top, RegionBottom: r.bottom, RegionFull: r.full}[region]
}

// Area is the share of the image a region (RegionTop, RegionBottom,
// RegionFull) covers: its mean alpha; -1 for an unknown region.
func (r *Regions) Area(region string) float64 {
	alpha := r.alpha(region)
	if alpha == nil {
		return -1
	}
	var area float64
	for _, v := range alpha.P {
		area += float64(v)
	}
	return area / float64(max(len(alpha.P), 1))
}

// Check says whether every garment of spec has a region to dress: a
// *RegionError for one that was not found (the reference recolouring and
// the generative stage both refuse it, rather than paint elsewhere).
func (r *Regions) Check(spec Spec) error {
	for _, g := range spec.Garments {
		area := r.Area(g.Region)
		if area < 0 {
			return fmt.Errorf("prompt-tryon: unknown region %q", g.Region)
		}
		if area < minRegionArea {
			return &RegionError{Region: g.Region, Area: area, Marks: r.marksArea}
		}
	}
	return nil
}

// contrastNeutral is the accent used when the prompt names a pattern but no
// colour for it: navy on light garments, off-white on dark ones.
func contrastNeutral(groundL float64) [3]uint8 {
	if groundL > 55 {
		return palette["navy"]
	}
	return palette["off white"]
}

// variations are the (ΔL*, Δhue degrees, chroma factor) of samples 2-4;
// later samples draw random ones of the same size.
var variations = [][3]float64{{3.5, 5, 1.06}, {-3.5, -5, 0.94}, {2, -3, 1.1}}

// jitter varies a colour for sample variations (seed > 0).
func jitter(c [3]uint8, seed int64, rng *rand.Rand) [3]uint8 {
	v := [3]float64{(rng.Float64()*2 - 1) * 3.5, (rng.Float64()*2 - 1) * 5, 1 + (rng.Float64()*2-1)*0.08}
	if int(seed) <= len(variations) {
		v = variations[seed-1]
	}
	L, A, B := rgbToLab(c)
	h := math.Atan2(B, A) + v[1]*math.Pi/180
	C := math.Hypot(A, B) * v[2]
	return labToRGB(L+v[0], C*math.Cos(h), C*math.Sin(h))
}

// paintGarment writes one garment into out (reading the original from src).
func paintGarment(out, src *image.RGBA, r *Regions, alpha *raster.Plane, g Garment, seed int64) {
	w, h := r.w, r.h
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	ref, ok := shadingReference(src, r, alpha)
	if !ok {
		return
	}
	pc := garmentColours(g, ref, seed, rng)
	lin := func(c [3]uint8) [3]float32 {
		return [3]float32{float32(lin8[c[0]]), float32(lin8[c[1]]), float32(lin8[c[2]])}
	}
	gLin, aLin, tLin := lin(pc.ground), lin(pc.accent), lin(pc.third)
	pat := newPatternField(r, g.Pattern, rng, seed != 0)
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := src.Pix[y*src.Stride:]
			orow := out.Pix[y*out.Stride:]
			for x := 0; x < w; x++ {
				i := y*w + x
				al := alpha.P[i]
				if al < minPaintAlpha {
					continue
				}
				s := float64(r.lum.P[i]) / ref.yref
				s = math.Min(math.Max(s, minShade), maxShade)
				s = 1 + (s-1)*ref.damp
				fa, fb := pat.at(x, y)
				var c [3]float32
				for k := range 3 {
					o := float32(lin8[row[x*4+k]])
					base := gLin[k] * float32(s)
					if pc.keepGround {
						base = o
					}
					c[k] = base*(1-fa-fb) + (aLin[k]*fa+tLin[k]*fb)*float32(s)
				}
				for k := range 3 {
					v := shoulder(c[k])
					nv := float32(raster.LinearToSRGB(float64(v))) * 255
					ov := float32(row[x*4+k])
					orow[x*4+k] = uint8(min(max(ov+(nv-ov)*al, 0), 255) + 0.5)
				}
			}
		}
	})
}

// Painting tuning.
const (
	// minPaintAlpha: weaker region pixels are left alone.
	minPaintAlpha = 0.002
	// minShade and maxShade bound the shading ratio (luminance over the
	// region's median).
	minShade = 0.25
	maxShade = 1.6
	// darkGarment: a region whose median linear luminance is under this
	// carries little shading signal; its ratios are damped by darkDamp.
	darkGarment = 0.04
	darkDamp    = 0.5
	// minShadeRef is the smallest median luminance divided by.
	minShadeRef = 0.005
	// motifMinL and motifMinAB: a motif closer than these (L*, a*b*
	// distance) to the garment's own colour would vanish.
	motifMinL  = 12
	motifMinAB = 15
	// lightGround: on a ground lighter than this L* the third colour is
	// charcoal, else cream.
	lightGround = 60
)

// shadeRef is a region's shading reference: its median linear luminance
// (yref), how much to damp the shading ratios, and its mean colour
// (L* groundL, RGB origMean): the garment's own colour, the pattern ground.
type shadeRef struct {
	yref, damp, groundL float64
	origMean            [3]uint8
}

// shadingReference measures the region alpha (> 0.5) of src; false when
// the region is empty.
func shadingReference(src *image.RGBA, r *Regions, alpha *raster.Plane) (shadeRef, bool) {
	w := r.w
	var lums []float32
	var sl, sa, sb, sn float64
	for i, a := range alpha.P {
		if a > 0.5 {
			lums = append(lums, r.lum.P[i])
			if i%3 == 0 {
				px := src.Pix[(i/w)*src.Stride+(i%w)*4:]
				l, aa, bb := rgbToLab([3]uint8{px[0], px[1], px[2]})
				sl, sa, sb, sn = sl+l, sa+aa, sb+bb, sn+1
			}
		}
	}
	if len(lums) == 0 {
		return shadeRef{}, false
	}
	slices.Sort(lums)
	ref := shadeRef{yref: float64(lums[len(lums)/2]), damp: 1.0}
	ref.groundL = sl / max(sn, 1)
	ref.origMean = labToRGB(ref.groundL, sa/max(sn, 1), sb/max(sn, 1))
	if ref.yref < darkGarment {
		ref.damp = darkDamp
	}
	ref.yref = math.Max(ref.yref, minShadeRef)
	return ref, true
}

// paintColours are a garment's resolved colours: the ground (unless the
// garment's own colour is kept), the motif accent and a third colour.
type paintColours struct {
	ground, accent, third [3]uint8
	keepGround            bool
}

// garmentColours resolves the ground and the motif colours of g on a
// region (ref), jittered from seed when it is not 0.
func garmentColours(g Garment, ref shadeRef, seed int64, rng *rand.Rand) paintColours {
	pc := paintColours{keepGround: g.Colour == nil && g.Pattern != PatternDenim}
	if g.Colour != nil {
		pc.ground = g.Colour.RGB
	} else if g.Pattern == PatternDenim {
		pc.ground = palette["denim"]
	}
	switch {
	case g.Accent != nil:
		pc.accent = g.Accent.RGB
	case pc.keepGround:
		pc.accent = contrastNeutral(ref.groundL)
	default:
		gl, _, _ := rgbToLab(pc.ground)
		pc.accent = contrastNeutral(gl)
	}
	if pc.keepGround {
		// A motif in the garment's own colour would vanish: swap in a
		// contrasting ground.
		al, aa, ab := rgbToLab(pc.accent)
		_, oa, ob := rgbToLab(ref.origMean)
		if math.Abs(al-ref.groundL) < motifMinL && math.Hypot(aa-oa, ab-ob) < motifMinAB {
			pc.keepGround = false
			pc.ground = contrastNeutral(al)
		}
	}
	if seed != 0 {
		pc.ground, pc.accent = jitter(pc.ground, seed, rng), jitter(pc.accent, seed, rng)
	}
	pc.third = palette["cream"]
	if gl, _, _ := rgbToLab(pc.ground); gl > lightGround {
		pc.third = palette["charcoal"]
	}
	if g.Pattern == PatternFloral {
		pc.third = palette["mustard"]
	}
	return pc
}

// shoulder compresses linear values above 0.85 smoothly toward 1.
func shoulder(v float32) float32 {
	if v <= 0 {
		return 0
	}
	if v <= 0.85 {
		return v
	}
	t := (v - 0.85) / 0.15
	return 0.85 + 0.15*t/(1+t)
}

// FitPixels returns img as *image.RGBA (origin 0,0), downscaled with
// Catmull-Rom when it has more than maxPx pixels.
func FitPixels(img image.Image, maxPx int) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w*h <= maxPx {
		return raster.CopyRGBA(img)
	}
	k := math.Sqrt(float64(maxPx) / float64(w*h))
	nw, nh := max(1, int(float64(w)*k)), max(1, int(float64(h)*k))
	out := image.NewRGBA(image.Rect(0, 0, nw, nh))
	xdraw.CatmullRom.Scale(out, out.Rect, img, b, xdraw.Src, nil)
	return out
}
