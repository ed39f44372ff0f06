package selfcheck

import (
	"image"
	"math"
	"sort"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Body-integrity check names.
const (
	NameLimbWidth    = "limb_width"
	NamePersonPieces = "person_pieces"
	NameGhostSmear   = "ghost_smear"
)

// Limits of the body-integrity checks. Measured on pose-control (custom
// poses walking, arms crossed, arms raised, hands on hips, classical path)
// on codait_man_standing, fashn_model, pixabay_two_women_bikes and
// pexels_two_women_phones; every output was looked at (the posecontrol
// package's TestBodyIntegrityOnPhotos pins the figures).
const (
	// MinLimbWidth is the smallest ratio (the narrower over the wider)
	// between a moved limb's width on the re-rendered person and on the
	// source. Unbroken limbs 0.72-1; fashn_model's raised arms, thinned
	// and cut at the sleeves, 0.59; with hands on hips 0.57; the bikes
	// photo "walking", whose legs the bicycle hides and the output shows
	// unmoved, 0.14.
	MinLimbWidth = 0.6
	// MaxPersonPieces is the largest share of the re-rendered person's
	// area that lies outside its largest connected piece (pieces smaller
	// than pieceMinFrac of the person ignored). 0 on every output but
	// fashn_model "walking" (0.034: the shoe left floating apart from the
	// stretched leg) and pexels_two_women_phones "arms raised" (0.062,
	// which largest_torn_hole fails already).
	MaxPersonPieces = 0.02
	// MaxGhostSmear is the largest smear left where the person used to be
	// (see ghostSmear), as a fraction of the image. Both callers measure
	// it on the working image, before the tier step (the tier's upscale
	// never reaches it). On pose-control the smears looked at measure
	// 0.0065-0.0706 (codait_man_standing "walking", the old leg on the
	// carpet, 0.0065; the bikes photo's old arm 0.0082; fashn_model's
	// dark fill where the arms hung, "arms crossed" 0.0083 and "arms
	// raised" 0.0259; fashn_model's old knee, "walking", 0.0706); on
	// angle-generation's turned and back views 0.0065-0.1982
	// (codait_man_standing's left45, the blurred rectangle on the carpet
	// beside the foot, 0.0353 on the 9:16 frame the pipeline picks when
	// the request names no ratio, 0.0359 on the photo's own 413x684).
	// The outputs passed clean measure 0-0.0022 (the front and back views
	// of the shared photos, fashn_garment's views and re-poses). The bikes
	// photo's one-arm re-poses ("arm raised", "waving", "pointing", "hand
	// on hip", "hand in pocket", "arms down") leave a blurred wedge of
	// foliage where the arm hung and measure 0.0027-0.0043: the limit sits
	// between (0.005 until issue 21's second pass let them through).
	MaxGhostSmear = 0.0025
	// pieceMinFrac is the smallest piece of the person counted, as a
	// fraction of its area.
	pieceMinFrac = 0.002
	// smearFlat is the ratio of the vacated region's texture (mean
	// luminance gradient in a window around a pixel) to the background's
	// near it below which the pixel is smear. While tuning, 0.5 counted
	// the thin halo of fill round codait_man_standing's shoes in the
	// front view (0.0046-0.0050, at the limit); 0.35 leaves it at 0.002
	// and keeps every smear listed at MaxGhostSmear above the limit.
	smearFlat = 0.35
	// smearWindowFrac is the half-width of the window, as a fraction of
	// the diagonal, over which a vacated pixel's texture is averaged;
	// the background's is averaged over twice that half-width. Local
	// windows, not whole vacated parts: one part can run from a plain
	// wall down onto a carpet (codait_man_standing's left45), and a
	// part's mean then sat at 0.49-0.52 of its ring's, in or out with a
	// 28-pixel crop of the frame.
	smearWindowFrac = 0.02
	// smearMinTexture is the least mean luminance gradient (levels per
	// pixel, at the working size) of the background near a vacated pixel
	// for the pixel to count: a fill on a plain or blurred background
	// (a studio wall, bokeh) is not seen as a smear.
	smearMinTexture = 2
	// smearMinBackground is the least share of the background window
	// that is background (neither where the person was nor is) for a
	// vacated pixel to be measured there; a pixel deeper inside a wide
	// vacated part is measured in a window twice as wide, up to
	// smearMaxWindows windows (2, 4, 8 and 16 times smearWindowFrac).
	smearMinBackground = 0.05
	smearMaxWindows    = 4
	// limbSamples are the positions along a bone where its width is read.
	limbSamples = 7
	// limbMinSamples is the fewest readable positions a bone's width
	// needs.
	limbMinSamples = 3
	// limbMovedFrac is how far, as a fraction of its length, a joint of
	// a bone must move for the bone's width to be compared.
	limbMovedFrac = 0.1
	// limbRunCap is the longest run from a bone to the mask's edge read,
	// as a fraction of the bone's length.
	limbRunCap = 0.5
)

// Bone is one limb bone: its two joints on the source and on the output.
type Bone struct {
	Name     string
	Src, Out [2]perception.Point
}

// BodyIntegrity measures a re-rendered person (out, its coverage person)
// against the source (src, the person mask was, both out's size): every
// moved limb's width (NameLimbWidth: the median width across the bone of
// the coverage, output over source, the worst bone's min(r, 1/r); bones
// left in place, reaching out of the frame or lying over the body are not
// read); the
// person's pieces (NamePersonPieces); and the smear left where the person
// stood (NameGhostSmear: the vacated pixels whose neighbourhood is flatter
// than smearFlat of the textured background near them; see ghostSmear).
func BodyIntegrity(src, out image.Image, was, person *image.Gray, bones []Bone) []pipelines.Check {
	return []pipelines.Check{
		pipelines.MinCheck(NameLimbWidth, round4(limbWidth(was, person, bones)), MinLimbWidth),
		pipelines.MaxCheck(NamePersonPieces, round4(pieces(person)), MaxPersonPieces),
		pipelines.MaxCheck(NameGhostSmear, round4(ghostSmear(out, was, person)), MaxGhostSmear),
	}
}

// GhostSmear is the NameGhostSmear check alone, for a view whose person
// is not re-posed bone by bone (angle-generation): was is where the
// person stood in the photo (or where the plate's fill lies), person the
// new view's coverage, both out's size.
func GhostSmear(out image.Image, was, person *image.Gray) pipelines.Check {
	return pipelines.MaxCheck(NameGhostSmear, round4(ghostSmear(out, was, person)), MaxGhostSmear)
}

// PersonPieces is the NamePersonPieces check alone (see BodyIntegrity).
func PersonPieces(person *image.Gray) pipelines.Check {
	return pipelines.MaxCheck(NamePersonPieces, round4(pieces(person)), MaxPersonPieces)
}

func limbWidth(was, person *image.Gray, bones []Bone) float64 {
	worst := 1.0
	for _, b := range bones {
		if !moved(b) || !inside(b.Src, was.Rect) || !inside(b.Out, person.Rect) {
			continue
		}
		ws, wo := boneWidth(was, b.Src), boneWidth(person, b.Out)
		if ws <= 0 || wo <= 0 {
			continue
		}
		worst = math.Min(worst, math.Min(wo/ws, ws/wo))
	}
	return worst
}

// inside reports whether both joints lie in r: a limb reaching out of the
// frame has no width to read there.
func inside(ab [2]perception.Point, r image.Rectangle) bool {
	for _, p := range ab {
		if p.X < float64(r.Min.X) || p.Y < float64(r.Min.Y) || p.X >= float64(r.Max.X) || p.Y >= float64(r.Max.Y) {
			return false
		}
	}
	return true
}

// moved reports whether a bone's output joints lie more than
// limbMovedFrac of its length from its source joints: a bone left in
// place is copied with the person, and its width there is the source's.
func moved(b Bone) bool {
	l := math.Hypot(b.Src[1].X-b.Src[0].X, b.Src[1].Y-b.Src[0].Y)
	for i := range b.Src {
		if math.Hypot(b.Out[i].X-b.Src[i].X, b.Out[i].Y-b.Src[i].Y) > limbMovedFrac*l {
			return true
		}
	}
	return false
}

// boneWidth is the median width of m across the bone a-b, read at
// limbSamples positions along its middle: twice the shorter of the two
// runs from the bone out to the mask's edge (a limb beside the torso runs
// on into it on one side only). A position whose shorter run reaches
// limbRunCap of the bone's length (the limb lies over the body: no edge
// to read) or that is off the mask is skipped; the bone reads 0 when
// fewer than limbMinSamples positions remain.
func boneWidth(m *image.Gray, ab [2]perception.Point) float64 {
	dx, dy := ab[1].X-ab[0].X, ab[1].Y-ab[0].Y
	l := math.Hypot(dx, dy)
	if l < 2 {
		return 0
	}
	nx, ny := -dy/l, dx/l
	limit := limbRunCap * l
	var ws []float64
	for i := range limbSamples {
		t := 0.25 + 0.5*float64(i)/float64(limbSamples-1)
		cx, cy := ab[0].X+t*dx, ab[0].Y+t*dy
		if !maskOn(m, cx, cy) {
			continue
		}
		side := limit
		for _, s := range []float64{1, -1} {
			k := 1.0
			for ; k < limit && maskOn(m, cx+s*k*nx, cy+s*k*ny); k++ {
			}
			side = math.Min(side, k)
		}
		if side < limit {
			ws = append(ws, 2*side)
		}
	}
	if len(ws) < limbMinSamples {
		return 0
	}
	sort.Float64s(ws)
	return ws[len(ws)/2]
}

func maskOn(m *image.Gray, x, y float64) bool {
	xi, yi := int(math.Round(x)), int(math.Round(y))
	if xi < 0 || yi < 0 || xi >= m.Rect.Dx() || yi >= m.Rect.Dy() {
		return false
	}
	return m.Pix[yi*m.Stride+xi] >= 128
}

// pieces is the share of person's area outside its largest piece.
func pieces(person *image.Gray) float64 {
	_, sizes := mask.Components(mask.Binary(person, 128))
	total, largest := 0, 0
	for _, s := range sizes[1:] {
		total += s
		largest = max(largest, s)
	}
	if total == 0 {
		return 0
	}
	rest := 0
	for _, s := range sizes[1:] {
		if s != largest && float64(s) >= pieceMinFrac*float64(total) {
			rest += s
		}
	}
	return float64(rest) / float64(total)
}

// ghostSmear is the area fraction of the vacated region (was on, person
// off, slivers opened away) that is smear: a vacated pixel whose region
// around it (smearWindowFrac of the diagonal either side) is flatter than
// smearFlat of the background near it (twice that window, wider deep
// inside a wide part: nearBackground; neither person's pixels nor a
// TearOpenFrac band round the new person, whose soft edge is no texture
// of the background), where that background is textured
// (smearMinTexture). The smear pixels are opened by
// TearOpenFrac of the diagonal, so a thin halo does not count. This is
// the plate's smooth fill where the person stood, showing as a smear on
// a textured background (carpet, foliage, concrete). All lengths are
// fractions of the diagonal and the comparison is local, so a crop or
// a re-framing of the view moves the value little.
func ghostSmear(out image.Image, was, person *image.Gray) float64 {
	b := was.Rect
	w, h := b.Dx(), b.Dy()
	diag := diagonal(b)
	pb := mask.Binary(person, 128)
	v := image.NewGray(b)
	for i := range v.Pix {
		if was.Pix[i] >= 128 && pb.Pix[i] == 0 {
			v.Pix[i] = 255
		}
	}
	v = mask.Open(v, TearOpenFrac*diag)
	near := mask.Dilate(pb, TearOpenFrac*diag)
	grad := gradMag(raster.RGBA(out))
	gv, nv := make([]float32, w*h), make([]float32, w*h)
	gb, nb := make([]float32, w*h), make([]float32, w*h)
	for i, g := range grad {
		if v.Pix[i] != 0 {
			gv[i], nv[i] = float32(g), 1
		}
		if was.Pix[i] < 128 && near.Pix[i] == 0 {
			gb[i], nb[i] = float32(g), 1
		}
	}
	r := max(1, int(math.Round(smearWindowFrac*diag)))
	gv, nv = mask.BoxBlur(gv, w, h, r), mask.BoxBlur(nv, w, h, r)
	bg := nearBackground(v, gb, nb, w, h, 2*r)
	smear := image.NewGray(b)
	for i, t := range bg {
		if t >= smearMinTexture && float64(gv[i]/nv[i]) < smearFlat*t {
			smear.Pix[i] = 255
		}
	}
	return float64(mask.Count(mask.Open(smear, TearOpenFrac*diag))) / float64(w*h)
}

// nearBackground is, for each pixel on in v, the mean of the background's
// gradient gb (nb: 1 where background) over the smallest window of
// half-width r, 2r, 4r ... (up to smearMaxWindows of them) that is at
// least smearMinBackground background: the interior of a wide vacated
// part is compared with the nearest background, not skipped. -1 where no
// window holds enough (and off v).
func nearBackground(v *image.Gray, gb, nb []float32, w, h, r int) []float64 {
	out := make([]float64, w*h)
	for i := range out {
		out[i] = -1
	}
	left := mask.Count(v)
	for k := 0; k < smearMaxWindows && left > 0; k, r = k+1, 2*r {
		g, n := mask.BoxBlur(gb, w, h, r), mask.BoxBlur(nb, w, h, r)
		for i := range out {
			if v.Pix[i] != 0 && out[i] < 0 && n[i] >= smearMinBackground {
				out[i] = float64(g[i] / n[i])
				left--
			}
		}
	}
	return out
}

// gradMag is the luminance gradient magnitude (central differences) of img.
func gradMag(img *image.RGBA) []float64 {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	lum := make([]float64, w*h)
	for y := range h {
		for x := range w {
			p := img.Pix[y*img.Stride+x*4:]
			lum[y*w+x] = 0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])
		}
	}
	g := make([]float64, w*h)
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			gx := lum[y*w+x+1] - lum[y*w+x-1]
			gy := lum[(y+1)*w+x] - lum[(y-1)*w+x]
			g[y*w+x] = math.Hypot(gx, gy)
		}
	}
	return g
}
