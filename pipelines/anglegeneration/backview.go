package anglegeneration

import (
	"image"
	"math"
	"math/rand/v2"
	"sort"

	"fashiond/cv"
	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
)

// Front prints on the top: pixels of the garment above the hips whose luma
// is far from the garment's median, when they are a minority (a logo, not
// an all-over pattern), are inpainted away.
const (
	clothesMaskMin     = 128 // parsing value above which a pixel is clothing
	personCoreMin      = 200 // person-mask value above which a pixel is surely the person
	printMinSamples    = 500 // fewer garment pixels: no print search
	printLumaDeviation = 45  // luma distance from the median that marks a print pixel
	printMinPixels     = 50  // fewer print pixels: nothing to remove
	printMaxShareDiv   = 4   // at least 1/printMaxShareDiv of the garment: a pattern, kept
	printDilate        = 2   // growth of the print mask before inpainting (pixels)
	printInpaintRadius = 5   // cv.Inpaint's neighbourhood (pixels)
)

// The hair colour is sampled around the head from the hair parsing.
const (
	hairMaskMin        = 160 // parsing value above which a pixel is hair
	hairMinSamples     = 100 // fewer samples: widen the window, then keep the default
	hairLowPercentile  = 3   // tenths: the darkest 30% (shadows) are left out
	hairHighPercentile = 9   // tenths: the brightest 10% (highlights) are left out
	hairContrastGain   = 1.5 // strand contrast per unit of the luma's coefficient of variation
	hairContrastMin    = 0.1
	hairContrastMax    = 0.35
)

// defaultHair is the hair look when the parsing shows none: a dark brown
// with a modest strand contrast.
var defaultHair = hairLook{colour: [3]float64{55, 42, 35}, contrast: 0.15}

// backView synthesises the back from the front texture: front prints and
// logos on the top are inpainted away (the back of a printed tee is usually
// plain), the face is replaced by hair continuing the hair colour, and the
// result is mirrored (left and right swap when seen from behind). It
// returns the person layer, its alpha and what was done.
func backView(s *scene.Scene, parse *perception.Parsing, faces []perception.Face) (*image.RGBA, *image.Gray, []string, error) {
	w, h := s.Image.Rect.Dx(), s.Image.Rect.Dy()
	img := image.NewRGBA(s.Image.Rect)
	copy(img.Pix, s.Image.Pix)
	var did []string
	if parse != nil && parse.Clothes != nil {
		filled, err := removePrint(img, s, parse.Clothes)
		if err != nil {
			return nil, nil, nil, err
		}
		if filled != nil {
			img = filled
			did = append(did, "front print removed by inpainting")
		}
	}
	if box, ok := headBox(s.Pose, faces, w, h); ok {
		look := hairColour(img, s.PersonMask, parse, box)
		keep := hairKeep(parse, w, h, box.Dx())
		paintHair(img, s.PersonMask, keep, box, look)
		did = append(did, "face and front hair replaced by a shaded hair mass (strands from the crown) in the visible hair colour")
	}
	return mirror(img), mirrorGray(s.PersonMask), did, nil
}

// removePrint inpaints a front print on the top (clothes: the clothing
// parsing) above the hips; it returns nil when there is none.
func removePrint(img *image.RGBA, s *scene.Scene, clothes *image.Gray) (*image.RGBA, error) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	hipY, _ := hipRow(s.Pose, h)
	cl := raster.ResizeGray(clothes, w, h)
	var lum []int
	idx := make([]int, 0, 1024)
	for y := 0; y < min(hipY, h); y++ {
		for x := 0; x < w; x++ {
			if cl.Pix[y*cl.Stride+x] > clothesMaskMin && s.PersonMask.Pix[y*s.PersonMask.Stride+x] > personCoreMin {
				i := y*img.Stride + x*4
				lum = append(lum, (299*int(img.Pix[i])+587*int(img.Pix[i+1])+114*int(img.Pix[i+2]))/1000)
				idx = append(idx, y*w+x)
			}
		}
	}
	printMask := printPixels(lum, idx, w, h)
	if printMask == nil {
		return nil, nil
	}
	return cv.Inpaint(img, scene.Dilate(printMask, printDilate), printInpaintRadius)
}

// printPixels marks the garment pixels (lum at the positions idx of a w x h
// image) far from the median luma, or returns nil when they are too few or
// too many to be a print.
func printPixels(lum, idx []int, w, h int) *image.Gray {
	if len(lum) <= printMinSamples {
		return nil
	}
	sorted := append([]int(nil), lum...)
	sort.Ints(sorted)
	med := sorted[len(sorted)/2]
	mask := image.NewGray(image.Rect(0, 0, w, h))
	cnt := 0
	for k, l := range lum {
		if abs(l-med) > printLumaDeviation {
			mask.Pix[idx[k]] = 255
			cnt++
		}
	}
	if cnt <= printMinPixels || cnt >= len(lum)/printMaxShareDiv {
		return nil
	}
	return mask
}

// hairLook is the colour of the synthesised hair and the relative
// contrast of its strands.
type hairLook struct {
	colour   [3]float64
	contrast float64
}

// hairSample is one hair pixel: its luma and colour.
type hairSample struct{ l, r, g, b float64 }

// hairColour reads the visible hair around the head box: the upper half
// first (the parsing can spill onto dark collars and shadows below the
// face), then the whole window; the colour is the mean of the 30..90 luma
// percentiles and the contrast follows the luma's spread.
func hairColour(img *image.RGBA, person *image.Gray, parse *perception.Parsing, box image.Rectangle) hairLook {
	if parse == nil || parse.Hair == nil {
		return defaultHair
	}
	hg := raster.ResizeGray(parse.Hair, img.Rect.Dx(), img.Rect.Dy())
	big := box.Inset(-box.Dx() / 2).Intersect(img.Rect)
	upper := big
	upper.Max.Y = box.Min.Y + box.Dy()/2
	v := hairSamples(img, person, hg, upper)
	if len(v) < hairMinSamples {
		v = hairSamples(img, person, hg, big)
	}
	if len(v) <= hairMinSamples {
		return defaultHair
	}
	return hairLookOf(v)
}

// hairSamples collects the hair pixels of the person inside r.
func hairSamples(img *image.RGBA, person, hair *image.Gray, r image.Rectangle) []hairSample {
	var v []hairSample
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if hair.Pix[y*hair.Stride+x] > hairMaskMin && person.Pix[y*person.Stride+x] > personCoreMin {
				i := y*img.Stride + x*4
				r, g, b := float64(img.Pix[i]), float64(img.Pix[i+1]), float64(img.Pix[i+2])
				v = append(v, hairSample{0.299*r + 0.587*g + 0.114*b, r, g, b})
			}
		}
	}
	return v
}

// hairLookOf is the mean colour of the samples between the hair
// percentiles and their strand contrast (sorts v).
func hairLookOf(v []hairSample) hairLook {
	look := defaultHair
	sort.Slice(v, func(i, j int) bool { return v[i].l < v[j].l })
	v = v[len(v)*hairLowPercentile/10 : len(v)*hairHighPercentile/10]
	var sum [3]float64
	var sl, sl2 float64
	for _, p := range v {
		sum[0] += p.r
		sum[1] += p.g
		sum[2] += p.b
		sl += p.l
		sl2 += p.l * p.l
	}
	n := float64(len(v))
	for c := range look.colour {
		look.colour[c] = sum[c] / n
	}
	m := sl / n
	if sd := math.Sqrt(math.Max(0, sl2/n-m*m)); m > 1 {
		look.contrast = math.Max(hairContrastMin, math.Min(hairContrastMax, hairContrastGain*sd/m))
	}
	return look
}

// The synthesised hair mass: strands fall radially from a crown above the
// head (a 1-D noise over the angle around the crown, varying slowly along
// the radius), over an ellipse fitted to the head box.
const (
	strandBins         = 720  // noise samples around the crown (half a degree each)
	strandSmoothPasses = 2    // [1 2 1]/4 passes over the noise: the strand width
	hairKeepFeatherDiv = 30   // the keep mask is feathered by the head width / this
	hairKeepFull       = 160  // keep value at which the hair fully replaces a pixel
	hairPersonMin      = 60   // person-mask value below which nothing is painted
	headCentreY        = 0.45 // ellipse centre, down the head box
	headRadiusX        = 0.52 // ellipse half-width, of the head box's width
	headRadiusY        = 0.58 // ellipse half-height, of the head box's height
	crownOffsetX       = 0.08 // crown right of the centre, of the half-width
	crownAboveY        = 1.6  // crown above the centre, of the half-height
	hairMarginDiv      = 5    // painted area: the head box grown by its larger side / this
	hairEdgeOuter      = 1.08 // ellipse radius where the hair's edge ends
	hairEdgeSoft       = 0.22 // width of the soft edge (ellipse radii)
	napeRow            = 1.02 // nape line (head box heights from its top) at the centre
	napeCurve          = 0.15 // how much the nape line rises towards the ears
	napeSoft           = 0.12 // width of the fade at the nape (head box heights)
)

// Strand texture and shading of the hair mass: a sphere lit from above
// with a soft sheen band across the upper back, darker towards the nape.
const (
	strandWeight0   = 0.65 // weight of the coarse strand layer
	strandWeight1   = 0.45 // weight of the fine strand layer
	strandFreq1     = 2.3  // angular frequency of the fine layer
	strandWave      = 6    // sideways wave of the coarse layer (bins)
	strandWaveFreq  = 5    // waves per head height along the radius
	strandDrift     = 9    // drift of the fine layer per head height (bins)
	shadeBase       = 0.6
	shadeSphere     = 0.45 // brightening at the sphere's centre
	shadeNape       = 0.22 // darkening below the head's middle
	sheenOffsetX    = 0.1
	sheenOffsetY    = 0.45
	sheenGain       = 0.18
	sheenHeight     = 0.02 // squared vertical spread of the sheen band
	sheenWidth      = 0.5  // squared horizontal spread of the sheen band
	strandContrastK = 1.4  // strand contrast per unit of the hair's contrast
)

// hairKeep is what may turn into hair: the face skin and the hair of the
// parsing, feathered by the head width bw; nil without a skin parsing
// (everything in the head ellipse may).
func hairKeep(parse *perception.Parsing, w, h, bw int) *image.Gray {
	if parse == nil || parse.Skin == nil {
		return nil
	}
	sk := raster.ResizeGray(parse.Skin, w, h)
	keep := image.NewGray(sk.Rect)
	copy(keep.Pix, sk.Pix)
	if parse.Hair != nil {
		hg := raster.ResizeGray(parse.Hair, w, h)
		for i, v := range hg.Pix {
			keep.Pix[i] = max(keep.Pix[i], v)
		}
	}
	return scene.Feather(keep, max(1, bw/hairKeepFeatherDiv))
}

// strandNoise is two layers of smoothed noise around the crown.
type strandNoise [2][strandBins]float64

// newStrandNoise draws the strand noise from a generator seeded by the
// image size (the same image gives the same hair).
func newStrandNoise(w, h int) *strandNoise {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	var s strandNoise
	for l := range s {
		for i := range s[l] {
			s[l][i] = rng.NormFloat64()
		}
		for pass := 0; pass < strandSmoothPasses; pass++ {
			prev := s[l][strandBins-1]
			for i := range s[l] {
				cur := s[l][i]
				s[l][i] = 0.25*prev + 0.5*cur + 0.25*s[l][(i+1)%strandBins]
				prev = cur
			}
		}
	}
	return &s
}

// at is layer l at the (wrapped, linearly interpolated) bin t.
func (s *strandNoise) at(l int, t float64) float64 {
	t = math.Mod(t, strandBins)
	if t < 0 {
		t += strandBins
	}
	i := int(t)
	f := t - float64(i)
	return s[l][i]*(1-f) + s[l][(i+1)%strandBins]*f
}

// headShape is the ellipse the hair mass fills and the crown its strands
// fall from.
type headShape struct {
	box            image.Rectangle
	bh             float64 // the head box's height
	cx, cy, rx, ry float64
	crownX, crownY float64
	strands        *strandNoise
	contrast       float64
	colour         [3]float64
}

// newHeadShape fits the ellipse and crown to the head box.
func newHeadShape(box image.Rectangle, look hairLook, strands *strandNoise) headShape {
	bw, bh := box.Dx(), box.Dy()
	cx, cy := float64(box.Min.X+box.Max.X)/2, float64(box.Min.Y)+float64(bh)*headCentreY
	rx, ry := float64(bw)*headRadiusX, float64(bh)*headRadiusY
	return headShape{box: box, bh: float64(bh), cx: cx, cy: cy, rx: rx, ry: ry,
		crownX: cx + crownOffsetX*rx, crownY: cy - crownAboveY*ry,
		strands: strands, contrast: look.contrast, colour: look.colour}
}

// cover is how much hair covers pixel (x, y) by the ellipse's soft edge
// and the nape line, with the ellipse coordinates dx, dy, its radius e and
// the row's depth fy down the head box.
func (hs headShape) cover(x, y int) (a, dx, dy, e, fy float64) {
	dx, dy = (float64(x)-hs.cx)/hs.rx, (float64(y)-hs.cy)/hs.ry
	e = math.Sqrt(dx*dx + dy*dy)
	a = math.Max(0, math.Min(1, (hairEdgeOuter-e)/hairEdgeSoft))
	fy = (float64(y) - float64(hs.box.Min.Y)) / hs.bh
	a *= math.Max(0, math.Min(1, (napeRow-napeCurve*dx*dx-fy)/napeSoft))
	return a, dx, dy, e, fy
}

// gain is the hair's brightness factor at (x, y): two strand layers
// drifting with the radius (so they are not perfectly straight) over the
// sphere shading and the sheen.
func (hs headShape) gain(x, y int, dx, dy, e, fy float64) float64 {
	ang := math.Atan2(float64(x)-hs.crownX, float64(y)-hs.crownY) / math.Pi * strandBins / 2
	rad := math.Hypot(float64(x)-hs.crownX, float64(y)-hs.crownY) / hs.bh
	st := strandWeight0*hs.strands.at(0, ang*1.0+strandWave*math.Sin(rad*strandWaveFreq)) + strandWeight1*hs.strands.at(1, ang*strandFreq1+strandDrift*rad)
	nz := math.Sqrt(math.Max(0, 1-math.Min(1, e*e)))
	shade := shadeBase + shadeSphere*nz - shadeNape*math.Max(0, fy-0.5)
	sx, sy := dx+sheenOffsetX, dy+sheenOffsetY
	shade += sheenGain * math.Exp(-(sy*sy)/sheenHeight) * math.Exp(-(sx*sx)/sheenWidth)
	return shade * (1 + strandContrastK*hs.contrast*st)
}

// paintHair blends the shaded hair mass over the head: it covers the
// face's skin and the visible hair inside the head ellipse (keep; hats and
// garments stay) wherever the person is.
func paintHair(img *image.RGBA, person, keep *image.Gray, box image.Rectangle, look hairLook) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	hs := newHeadShape(box, look, newStrandNoise(w, h))
	area := box.Inset(-max(box.Dx(), box.Dy()) / hairMarginDiv).Intersect(img.Rect)
	for y := area.Min.Y; y < area.Max.Y; y++ {
		for x := area.Min.X; x < area.Max.X; x++ {
			if person.Pix[y*person.Stride+x] < hairPersonMin {
				continue
			}
			a, dx, dy, e, fy := hs.cover(x, y)
			if a <= 0 {
				continue
			}
			if keep != nil {
				a *= math.Min(1, float64(keep.Pix[y*keep.Stride+x])/hairKeepFull)
			}
			if a <= 0 {
				continue
			}
			g := hs.gain(x, y, dx, dy, e, fy)
			i := y*img.Stride + x*4
			for c := 0; c < 3; c++ {
				v := hs.colour[c] * g
				img.Pix[i+c] = uint8(math.Max(0, math.Min(255, float64(img.Pix[i+c])*(1-a)+v*a)) + 0.5)
			}
		}
	}
}
