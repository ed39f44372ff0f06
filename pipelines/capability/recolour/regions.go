package recolour

import (
	"context"
	"fmt"
	"image"
	"math"
	"slices"

	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
)

// Regions are the soft garment masks of one person image and the body
// frame that patterns follow.
type Regions struct {
	w, h               int
	top, bottom, full  *raster.Plane // 0..1 alphas, feathered
	clothes            *raster.Plane // garment-ness before the split
	person             *raster.Plane
	lum                *raster.Plane // linear luminance of the image
	waistX, waistY     float64
	upX, upY           float64 // unit vector from the waist toward the shoulders
	torso, shoulder    float64 // lengths in pixels
	hipsInFrame        bool
	hipsFromPose       bool // the pose model's hips were plausible (else estimated)
	faceFramed         bool // the frame came from the face: the pose's skeleton lay inside it
	faceBox            [4]float64
	seedCounts         [2]int // seed pixel counts for the top and bottom colour models
	topModel, botModel *labModel
	hanging            *raster.Plane // hair the parser labelled clothes (hangingHair), or nil
	hair               *raster.Plane // the parser's hair and the hanging hair
	marksArea          float64       // share of the image of the marks on bare skin the parser called clothes (dropMarksOnSkin)
}

// NoPersonError says the pose model found no person to dress.
type NoPersonError struct {
	Presence float64 // pose model person presence 0..1
	Cover    float64 // fraction of the image the person mask covers
}

func (e *NoPersonError) Error() string {
	return fmt.Sprintf("prompt-tryon: no person found in the image to dress (pose presence %.2f, person mask covers %.1f%% of it); use a photo of a person wearing the garment to change", e.Presence, e.Cover*100)
}

// labModel is a per-channel Gaussian colour model over L* and the rg
// chromaticity of linear light (x100).
type labModel struct {
	mean, std [3]float64
	// chroma (C*) and hue (degrees) of the garment's bright pixels, and
	// whether it is chromatic enough (C* > 20) for the hue to identify it.
	chroma, hue float64
	chromatic   bool
}

// offHue rates 0..1 how clearly a pixel (chroma c, hue h) is not the
// garment's colour: nearly grey, or of another hue, on a chromatic
// garment. 0 for achromatic garments.
func (m *labModel) offHue(c, h float32) float32 {
	if !m.chromatic {
		return 0
	}
	cm := float32(m.chroma)
	grey := raster.Smoothstep(0.35*cm, 0.15*cm, c)
	d := math.Abs(float64(h) - m.hue)
	if d > 180 {
		d = 360 - d
	}
	other := raster.Smoothstep(30, 50, float32(d)) * raster.Smoothstep(0.15*cm, 0.35*cm, c)
	return max(grey, other)
}

// dist is the mean squared z-score of a Lab colour.
func (m *labModel) dist(l, a, b float32) float32 {
	z0 := (float64(l) - m.mean[0]) / m.std[0]
	z1 := (float64(a) - m.mean[1]) / m.std[1]
	z2 := (float64(b) - m.mean[2]) / m.std[2]
	return float32((z0*z0 + z1*z1 + z2*z2) / 3)
}

// FindRegions runs the pose, person and skin/clothes/hair models and
// builds the garment masks:
//
//   - garment-ness = clothes probability inside the person (pose-model and
//     selfie masks fused), minus skin and hair; holes the clothes model
//     leaves are filled with pixels of the person whose Lab colour matches
//     the garment's colour model;
//   - top/bottom split at a waist line just above the hips (pose), refined
//     near the line by which garment's colour a pixel matches; when the hips
//     are implausible (upper-body shots) the waist is put below the frame;
//   - hair of a clear hue that the parser calls clothes where it hangs over
//     a shoulder (hangingHair) is hair, and colour alone adds no garment
//     pixel next to it;
//   - closing of small holes, then feathered edges.
func FindRegions(ctx context.Context, p perception.Perception, img *image.RGBA) (*Regions, error) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	s, err := perceive(ctx, p, img)
	if err != nil {
		return nil, err
	}
	pose, parse := s.pose, s.parse
	r := &Regions{w: w, h: h}
	wk := &regionWork{diag: math.Hypot(float64(w), float64(h))}
	face := faceOverShoulders(pose, s.faces)
	wk.pg = r.personPlanes(pose, s.sel, face != nil)
	wk.clothes = raster.MaskPlane(parse.Clothes, w, h)
	wk.skin = raster.MaskPlane(parse.Skin, w, h)
	wk.hair = raster.MaskPlane(parse.Hair, w, h)
	if wk.clothes == nil || wk.skin == nil || wk.hair == nil {
		return nil, fmt.Errorf("clothes parsing returned empty masks")
	}
	wk.notBody = raster.NewPlane(w, h) // 1 - max(skin, hair)
	wk.core = raster.NewPlane(w, h)
	for i := range wk.core.P {
		nb := 1 - max(wk.skin.P[i], wk.hair.P[i])
		wk.notBody.P[i] = nb
		wk.core.P[i] = wk.clothes.P[i] * wk.pg.P[i] * nb
	}
	z := r.frame(s.pose, face, wk.core)
	wk.handsFace, wk.shoes = bodyZones(z, w, h, r.shoulder)
	r.labPlanes(img, wk)
	r.topModel = fitModel(wk.core, wk.L, wk.A, wk.B, wk.Cp, wk.Hp, func(i int) bool { return r.torsoPos(i) > topSeedAbove }, &r.seedCounts[0])
	r.botModel = fitModel(wk.core, wk.L, wk.A, wk.B, wk.Cp, wk.Hp, func(i int) bool { return r.torsoPos(i) < -bottomSeedBelow && wk.shoes.P[i] == 0 }, &r.seedCounts[1])
	if hh := r.hangingHair(wk); hh != nil {
		r.hanging = hh
		for i, v := range hh.P {
			wk.hair.P[i] = max(wk.hair.P[i], v)
		}
	}
	r.hair = wk.hair
	shoeOff := r.refineNotBody(wk)
	// Shoe decisions are made on a neighbourhood, so that the odd boot
	// pixel that happens to match the trousers goes with its shoe, and
	// below a trouser hem everything in the shoe zone is shoe.
	cutBelowHems(pose, wk.shoes, shoeOff, r.shoulder, r.hipsFromPose)
	raster.Blur(shoeOff, raster.NewPlane(w, h), wk.diag*shoeBlur)
	for i := range wk.core.P {
		if wk.shoes.P[i] > 0 {
			wk.notBody.P[i] *= 1 - raster.Smoothstep(0.3, 0.55, shoeOff.P[i])
		}
		wk.core.P[i] = wk.clothes.P[i] * wk.pg.P[i] * wk.notBody.P[i]
	}
	pTop := r.garmentness(wk)
	r.closeAndSplit(wk, pTop)
	return r, nil
}

// Region tuning (image lengths are shares of the image diagonal, torso
// positions are in torso lengths above the waist).
const (
	// minPresence, minPersonCover and minShoulderVisibility: below these
	// (presence, person mask share of the image, both shoulders'
	// visibility) there is no person to dress.
	minPresence           = 0.5
	minPersonCover        = 0.02
	minShoulderVisibility = 0.3
	// topSeedAbove and bottomSeedBelow: the top's colour model is fitted
	// on the clothes this far above the waist, the bottom's this far below.
	topSeedAbove    = 0.25
	bottomSeedBelow = 0.12
	// separatedZ2: the two garments' colour models are separated when
	// their mean squared z-distance exceeds this.
	separatedZ2 = 4
	// shoeBlur: the shoe decision is blurred over this share.
	shoeBlur = 0.006
	// nearBlur: "near the clothes" is the clothes blurred over this share.
	nearBlur = 0.04
	// splitSharpness: the top/bottom logit is the torso position over this;
	// below the waist separatedSharpness when the garments' colours are
	// separated, so that colour decides down to half a torso length below
	// the waist estimate (a hoodie or tunic hangs to the hips; trousers do
	// not climb up the chest).
	splitSharpness     = 0.01
	separatedSharpness = 0.05
	// colourVote and maxColourVote: a pixel's colour moves the top/bottom
	// logit by this times the models' distance difference, at most
	// maxColourVote.
	colourVote    = 1
	maxColourVote = 10
	// voteNear and voteFar: only a pixel that looks like one of the
	// garments votes: fully when its distance to the nearer colour model is
	// below voteNear, not at all beyond voteFar (a shadow, the background
	// under an arm).
	voteNear = 2
	voteFar  = 4
	// holeBlur: small holes are closed with a blur over this share.
	holeBlur = 0.004
	// featherPx and featherDiag: the masks' edges are feathered with a
	// blur of featherPx pixels plus featherDiag of the diagonal.
	featherPx   = 0.6
	featherDiag = 0.0006
)

// regionWork holds the planes FindRegions builds on the way: the lenient
// person mask pg, the parser's clothes, skin and hair, the not-skin/hair
// share, the clothes core, the hands-and-face and shoe zones, and the
// pixels' Lab (L, and rg chromaticity A, B), chroma and hue.
type regionWork struct {
	diag                    float64
	pg, clothes, skin, hair *raster.Plane
	notBody, core           *raster.Plane
	handsFace, shoes        *raster.Plane
	L, A, B, Cp, Hp         *raster.Plane
}

// seen is what the perception models report on one image: the pose, the
// selfie person mask, the skin/clothes/hair parsing and the faces.
type seen struct {
	pose  *perception.Pose
	sel   *image.Gray
	parse *perception.Parsing
	faces []perception.Face
}

// perceive runs the pose, person mask, parsing and face models and fails
// with a NoPersonError when there is no person to dress.
func perceive(ctx context.Context, p perception.Perception, img *image.RGBA) (*seen, error) {
	var s seen
	var err error
	if s.pose, err = p.Pose(ctx, img); err != nil {
		return nil, fmt.Errorf("pose: %w", err)
	}
	if s.sel, err = p.PersonMask(ctx, img); err != nil {
		return nil, fmt.Errorf("person mask: %w", err)
	}
	if s.parse, err = p.Parse(ctx, img); err != nil {
		return nil, fmt.Errorf("clothes parsing: %w", err)
	}
	if s.faces, err = p.Faces(ctx, img); err != nil {
		return nil, fmt.Errorf("face detection: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	selArea := 0
	for _, v := range s.sel.Pix {
		if v > 128 {
			selArea++
		}
	}
	cover := float64(selArea) / float64(max(len(s.sel.Pix), 1))
	kp := s.pose.Keypoints
	if s.pose.Presence < minPresence || cover < minPersonCover ||
		kp[perception.KpLeftShoulder].Visibility < minShoulderVisibility && kp[perception.KpRightShoulder].Visibility < minShoulderVisibility {
		return nil, &NoPersonError{Presence: s.pose.Presence, Cover: cover}
	}
	return &s, nil
}

// personPlanes fuses the pose model's and the selfie model's person masks
// into r.person, and returns the lenient person mask for the garments.
// With noPoseMask (the pose's skeleton is wrong, see frame) the pose
// model's mask, made for that skeleton, is left out.
func (r *Regions) personPlanes(pose *perception.Pose, sel *image.Gray, noPoseMask bool) *raster.Plane {
	w, h := r.w, r.h
	pm, ps := raster.MaskPlane(pose.Mask, w, h), raster.MaskPlane(sel, w, h)
	if noPoseMask {
		pm = nil
	}
	r.person = raster.NewPlane(w, h)
	pg := raster.NewPlane(w, h)
	for i := range r.person.P {
		var v float32
		switch {
		case pm != nil && ps != nil:
			v = (pm.P[i] + ps.P[i]) / 2
		case ps != nil:
			v = ps.P[i]
		case pm != nil:
			v = pm.P[i]
		}
		r.person.P[i] = raster.Smoothstep(0.3, 0.7, v)
		pg.P[i] = raster.Smoothstep(0.1, 0.45, v)
	}
	return pg
}

// labPlanes fills the Lab-derived planes of wk and r.lum (linear
// luminance) from img.
func (r *Regions) labPlanes(img *image.RGBA, wk *regionWork) {
	w, h := r.w, r.h
	wk.L, wk.A, wk.B = raster.NewPlane(w, h), raster.NewPlane(w, h), raster.NewPlane(w, h)
	wk.Cp, wk.Hp = raster.NewPlane(w, h), raster.NewPlane(w, h)
	r.lum = raster.NewPlane(w, h)
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := img.Pix[y*img.Stride:]
			for x := 0; x < w; x++ {
				i := y*w + x
				lr, lg, lb := lin8[row[x*4]], lin8[row[x*4+1]], lin8[row[x*4+2]]
				l, la, lb2 := linToLab(lr, lg, lb)
				wk.Cp.P[i], wk.Hp.P[i] = float32(math.Hypot(la, lb2)), float32(hueDeg(la, lb2))
				sum := lr + lg + lb + 0.01
				wk.L.P[i], wk.A.P[i], wk.B.P[i] = float32(l), float32(100*lr/sum), float32(100*lg/sum)
				r.lum.P[i] = float32(0.2126*lr + 0.7152*lg + 0.0722*lb)
			}
		}
	})
}

// torsoPos is pixel i's signed distance along the torso axis, in torso
// lengths (>0: above the waist).
func (r *Regions) torsoPos(i int) float64 {
	x, y := float64(i%r.w), float64(i/r.w)
	return ((x-r.waistX)*r.upX + (y-r.waistY)*r.upY) / r.torso
}

// separated says whether the top's and the bottom's colour models are far
// enough apart for colour to decide between them.
func (r *Regions) separated() bool {
	if r.topModel == nil || r.botModel == nil {
		return false
	}
	var d float64
	for c := range 3 {
		s := (r.topModel.std[c] + r.botModel.std[c]) / 2
		z := (r.topModel.mean[c] - r.botModel.mean[c]) / s
		d += z * z
	}
	return d/3 > separatedZ2
}

// modelDists are pixel i's colour distances to the top's and the bottom's
// models (1e9 where a model is missing).
func (r *Regions) modelDists(wk *regionWork, i int) (dT, dB float32) {
	dT, dB = 1e9, 1e9
	if r.topModel != nil {
		dT = r.topModel.dist(wk.L.P[i], wk.A.P[i], wk.B.P[i])
	}
	if r.botModel != nil {
		dB = r.botModel.dist(wk.L.P[i], wk.A.P[i], wk.B.P[i])
	}
	return dT, dB
}

// refineNotBody corrects the not-skin/hair share with colour: a skin
// colour model from the hands and the face tells a hand resting on a
// garment from skin-toned cloth around it; the skin model mistakes
// skin-toned cloth (khaki, camel, blush) for skin, so away from the hands
// and the face, pixels that match a garment's colour closely are not skin.
// It returns, in the shoe zone, how clearly a pixel is no garment colour
// (below the knees such pixels are shoes, not trousers).
func (r *Regions) refineNotBody(wk *regionWork) *raster.Plane {
	w, h := r.w, r.h
	shoeOff := raster.NewPlane(w, h)
	var skinCount int
	skinModel := fitModel(wk.skin, wk.L, wk.A, wk.B, wk.Cp, wk.Hp, func(i int) bool { return wk.handsFace.P[i] > 0 && wk.skin.P[i] > 0.8 }, &skinCount)
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			dT, dB := r.modelDists(wk, i)
			d := min(dT, dB)
			dHere := dT
			if r.torsoPos(i) < 0 && r.hipsInFrame {
				dHere = dB
			}
			trust := wk.handsFace.P[i]
			if trust > 0 && skinModel != nil {
				trust *= raster.Smoothstep(-0.5, 0.5, d-skinModel.dist(wk.L.P[i], wk.A.P[i], wk.B.P[i]))
			}
			sk := wk.skin.P[i] * (1 - raster.Smoothstep(3, 1.2, d)*(1-trust))
			nb := 1 - max(sk, wk.hair.P[i])
			nb *= 1 - wk.handsFace.P[i]*raster.Smoothstep(2, 5, dHere)
			if wk.shoes.P[i] > 0 {
				off := raster.Smoothstep(2, 6, d)
				if r.botModel != nil {
					zl := math.Abs(float64(wk.L.P[i])-r.botModel.mean[0]) / r.botModel.std[0]
					off = max(off, raster.Smoothstep(1.4, 2.2, float32(zl)))
				}
				shoeOff.P[i] = off
			}
			wk.notBody.P[i] = nb
		}
	})
	return shoeOff
}

// garmentness sets r.clothes: the clothes core, filled near it with person
// pixels whose colour matches the garment there, less pixels of another
// hue or far from both garments' colours. It returns each pixel's
// probability of belonging to the top (1 everywhere when the hips are out
// of the frame).
func (r *Regions) garmentness(wk *regionWork) *raster.Plane {
	w, h := r.w, r.h
	near := raster.NewPlane(w, h)
	copy(near.P, wk.core.P)
	near = raster.WideBlur(near, wk.diag*nearBlur)
	r.noFillNearHangingHair(near, wk.diag)
	separated := r.separated()
	r.clothes = raster.NewPlane(w, h)
	pTop := raster.NewPlane(w, h)
	raster.ParallelRows(h, func(y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			t := r.torsoPos(i)
			logit := t / splitSharpness
			dT, dB := r.modelDists(wk, i)
			if separated {
				vote := math.Max(-maxColourVote, math.Min(maxColourVote, float64(dB-dT)*colourVote))
				if t < 0 {
					logit = t / separatedSharpness
				}
				logit += vote * float64(raster.Smoothstep(voteFar, voteNear, min(dT, dB)))
			}
			pt := float32(1 / (1 + math.Exp(-logit)))
			if !r.hipsInFrame {
				pt = 1
			}
			pTop.P[i] = pt
			r.clothes.P[i] = r.garmentAt(wk, i, t, dT, dB, near.P[i])
		}
	})
	return pTop
}

// garmentAt is pixel i's garment-ness (torso position t, colour distances
// dT and dB, nearness to the clothes core nearV).
func (r *Regions) garmentAt(wk *regionWork, i int, t float64, dT, dB, nearV float32) float32 {
	d := min(dT, dB)
	dHere := dT
	if t < 0 && r.hipsInFrame {
		dHere = dB
	}
	sim := raster.Smoothstep(6, 2, dHere)
	fillv := sim * r.person.P[i] * wk.notBody.P[i] * raster.Smoothstep(0.01, 0.08, nearV)
	g := max(wk.core.P[i], fillv)
	here := r.topModel
	if (t < 0 && r.hipsInFrame && r.botModel != nil) || here == nil {
		here = r.botModel
	}
	if here != nil {
		g *= 1 - here.offHue(wk.Cp.P[i], wk.Hp.P[i])
	}
	if r.topModel != nil || r.botModel != nil {
		g *= 1 - raster.Smoothstep(8, 14, d)
	}
	return g
}

// closeAndSplit closes small holes in r.clothes, cuts skin and hair out
// again, drops stray pieces, splits it into r.full, r.top and r.bottom by pTop and feathers
// their edges.
func (r *Regions) closeAndSplit(wk *regionWork, pTop *raster.Plane) {
	w, h := r.w, r.h
	closed := raster.NewPlane(w, h)
	copy(closed.P, r.clothes.P)
	raster.Blur(closed, raster.NewPlane(w, h), wk.diag*holeBlur)
	for i := range closed.P {
		closed.P[i] = max(r.clothes.P[i], raster.Smoothstep(0.35, 0.65, closed.P[i])) * raster.Smoothstep(0.2, 0.6, wk.notBody.P[i]) * wk.pg.P[i]
	}
	r.dropStrayPieces(closed, wk)
	r.clothes = closed
	r.full, r.top, r.bottom = raster.NewPlane(w, h), raster.NewPlane(w, h), raster.NewPlane(w, h)
	for i := range closed.P {
		v := closed.P[i]
		r.full.P[i] = v
		r.top.P[i] = v * pTop.P[i]
		r.bottom.P[i] = v * (1 - pTop.P[i])
	}
	for _, m := range []*raster.Plane{r.full, r.top, r.bottom} {
		raster.Blur(m, raster.NewPlane(w, h), featherPx+wk.diag*featherDiag)
	}
}

// geometry derives the waist, the torso axis and the body scale from the
// pose, falling back to the clothes mask's extent where joints are missing.
func (r *Regions) geometry(pose *perception.Pose, core *raster.Plane) {
	kp := pose.Keypoints
	ls, rs := kp[perception.KpLeftShoulder], kp[perception.KpRightShoulder]
	lh, rh := kp[perception.KpLeftHip], kp[perception.KpRightHip]
	fw, fh := float64(r.w), float64(r.h)
	if ls.Visibility < 0.3 || rs.Visibility < 0.3 {
		// No shoulders: use the clothes extent, waist at 55% of it.
		y0, y1, x0, x1 := r.h, 0, r.w, 0
		for i, v := range core.P {
			if v > 0.5 {
				x, y := i%r.w, i/r.w
				y0, y1, x0, x1 = min(y0, y), max(y1, y), min(x0, x), max(x1, x)
			}
		}
		if y1 < y0 {
			y0, y1, x0, x1 = 0, r.h-1, 0, r.w-1
		}
		r.upX, r.upY = 0, -1
		r.shoulder = math.Max(float64(x1-x0)*0.6, fw*0.2)
		r.torso = r.shoulder * 1.5
		r.waistX, r.waistY = float64(x0+x1)/2, float64(y0)+0.55*float64(y1-y0)
		r.hipsInFrame = r.waistY < fh*0.95
		return
	}
	smx, smy := (ls.X+rs.X)/2, (ls.Y+rs.Y)/2
	r.shoulder = math.Max(math.Hypot(ls.X-rs.X, ls.Y-rs.Y), fw*0.05)
	hmx, hmy := (lh.X+rh.X)/2, (lh.Y+rh.Y)/2
	torso := math.Hypot(smx-hmx, smy-hmy)
	raise := 0.15 // the waistband sits a little above the hip joints
	if lh.Visibility < 0.5 || rh.Visibility < 0.5 || torso < 1.15*r.shoulder || hmy < smy {
		// Hips missing or anatomically implausible (the pose model guesses
		// hips inside upper-body crops). Hanging arms put the wrists at hip
		// level: with both wrists in view well below the shoulders, the hips
		// are there; with the wrists out of the frame the photo is an
		// upper-body crop and every garment in view is the top.
		lw, rw := kp[perception.KpLeftWrist], kp[perception.KpRightWrist]
		wy := (lw.Y + rw.Y) / 2
		if lw.Visibility > 0.5 && rw.Visibility > 0.5 && wy > smy+1.2*r.shoulder && wy < fh {
			hmx, hmy = smx, wy-0.1*r.shoulder
		} else {
			hmx, hmy = smx, fh+r.shoulder
		}
		torso = math.Max(hmy-smy, r.shoulder)
		raise = 0
		r.hipsFromPose = false
		r.upX, r.upY = 0, -1
	} else {
		r.upX, r.upY = (smx-hmx)/torso, (smy-hmy)/torso
		r.hipsFromPose = true
	}
	r.torso = torso
	r.waistX, r.waistY = hmx+raise*(smx-hmx), hmy+raise*(smy-hmy)
	r.hipsInFrame = r.waistY < fh*waistInFrame
}

// bodyZones returns masks of the zones' hands, face and arms and of their
// shoes (shoulder width sw).
func bodyZones(z zones, w, h int, sw float64) (handsFace, shoes *raster.Plane) {
	handsFace, shoes = raster.NewPlane(w, h), raster.NewPlane(w, h)
	raster.ParallelRows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			fy := float64(y)
			for x := 0; x < w; x++ {
				fx := float64(x)
				i := y*w + x
				if z.inHandsFace(fx, fy, sw) {
					handsFace.P[i] = 1
				}
				if z.inShoes(fx, fy, sw) {
					shoes.P[i] = 1
				}
			}
		}
	})
	return handsFace, shoes
}

// Zone tuning, in shoulder widths.
const (
	// faceDisc: a disc of this radius around each visible face keypoint;
	// wristDisc around each wrist.
	faceDisc  = 0.7
	wristDisc = 0.1
	// fingerReach: the hand's segments run from the wrist through the
	// knuckles this many times their length (to the fingertips).
	fingerReach = 1.35
	// handWidth and armWidth: the hands' and arms' segments' radii.
	handWidth = 0.1
	armWidth  = 0.12
	// footDisc: a disc around each visible ankle, heel and foot index.
	footDisc = 0.5
	// shinFrom, shinTo and shinWidth: the shoe zone along the knee-ankle
	// line, from this share of it to past the ankle, this wide.
	shinFrom  = 0.35
	shinTo    = 1.8
	shinWidth = 0.45
)

// zoneDisc and zoneSeg are the shapes the zones are made of.
type zoneDisc struct{ x, y, r float64 }
type zoneSeg struct{ ax, ay, bx, by float64 }

// zones are the shapes of the hands-and-face zone (discs hf, hand and arm
// segments) and of the shoe zone (feet discs, shins).
type zones struct {
	hf, feet           []zoneDisc
	hands, arms, shins []zoneSeg
}

// zoneShapes builds the zones' shapes from the pose: the face and the
// wrists; hands from the wrist through the pinky, index and thumb knuckles,
// extended to the fingertips; arms (where the skin model sees skin on an
// arm, trust it); and, on plausible legs, the feet and shins.
func zoneShapes(pose *perception.Pose, sw float64, hipsOK bool) zones {
	kp := pose.Keypoints
	var z zones
	for k := 0; k <= 10; k++ {
		if kp[k].Visibility > 0.5 {
			z.hf = append(z.hf, zoneDisc{kp[k].X, kp[k].Y, faceDisc * sw})
		}
	}
	for _, hnd := range [][4]int{{15, 17, 19, 21}, {16, 18, 20, 22}} {
		wr := kp[hnd[0]]
		if wr.Visibility < 0.3 {
			continue
		}
		z.hf = append(z.hf, zoneDisc{wr.X, wr.Y, wristDisc * sw})
		for _, k := range hnd[1:] {
			f := kp[k]
			z.hands = append(z.hands, zoneSeg{wr.X, wr.Y, wr.X + fingerReach*(f.X-wr.X), wr.Y + fingerReach*(f.Y-wr.Y)})
		}
	}
	for _, a := range [][2]int{{perception.KpLeftShoulder, perception.KpLeftElbow}, {perception.KpLeftElbow, perception.KpLeftWrist},
		{perception.KpRightShoulder, perception.KpRightElbow}, {perception.KpRightElbow, perception.KpRightWrist}} {
		p, q := kp[a[0]], kp[a[1]]
		if p.Visibility > 0.5 && q.Visibility > 0.5 {
			z.arms = append(z.arms, zoneSeg{p.X, p.Y, q.X, q.Y})
		}
	}
	for side, ok := range legsPlausible(pose, sw, hipsOK) {
		if !ok {
			continue
		}
		kn, an := kp[perception.KpLeftKnee+side], kp[perception.KpLeftAnkle+side]
		z.shins = append(z.shins, zoneSeg{kn.X, kn.Y, an.X, an.Y})
		for _, k := range []int{perception.KpLeftAnkle + side, 29 + side, 31 + side} { // ankle, heel, foot index
			if kp[k].Visibility > 0.4 {
				z.feet = append(z.feet, zoneDisc{kp[k].X, kp[k].Y, footDisc * sw})
			}
		}
	}
	return z
}

// inDiscs says whether (fx, fy) lies in one of the discs.
func inDiscs(ds []zoneDisc, fx, fy float64) bool {
	for _, d := range ds {
		if (fx-d.x)*(fx-d.x)+(fy-d.y)*(fy-d.y) < d.r*d.r {
			return true
		}
	}
	return false
}

// nearSegs says whether (fx, fy) lies within squared distance r2 of one of
// the segments.
func nearSegs(ss []zoneSeg, fx, fy, r2 float64) bool {
	for _, s := range ss {
		if segDist2(fx, fy, s.ax, s.ay, s.bx, s.by) < r2 {
			return true
		}
	}
	return false
}

// inHandsFace says whether (fx, fy) is in the hands-and-face zone.
func (z *zones) inHandsFace(fx, fy, sw float64) bool {
	return inDiscs(z.hf, fx, fy) || nearSegs(z.hands, fx, fy, handWidth*handWidth*sw*sw) || nearSegs(z.arms, fx, fy, armWidth*armWidth*sw*sw)
}

// inShoes says whether (fx, fy) is in the shoe zone: a foot disc, or near
// a shin's line between shinFrom and shinTo of its length.
func (z *zones) inShoes(fx, fy, sw float64) bool {
	if inDiscs(z.feet, fx, fy) {
		return true
	}
	for _, s := range z.shins {
		dx, dy := s.bx-s.ax, s.by-s.ay
		l2 := dx*dx + dy*dy
		if l2 == 0 {
			continue
		}
		t := ((fx-s.ax)*dx + (fy-s.ay)*dy) / l2
		if t < shinFrom || t > shinTo {
			continue
		}
		px, py := s.ax+t*dx, s.ay+t*dy
		if (fx-px)*(fx-px)+(fy-py)*(fy-py) < shinWidth*shinWidth*sw*sw {
			return true
		}
	}
	return false
}

// legsPlausible reports per side (left, right) whether the pose model's
// leg is usable: hips from the pose, hip, knee and ankle visible, and thigh
// and shin of anatomically plausible length (the model invents legs below
// the frame of upper-body crops).
func legsPlausible(pose *perception.Pose, sw float64, hipsOK bool) [2]bool {
	var ok [2]bool
	if !hipsOK {
		return ok
	}
	kp := pose.Keypoints
	for side := range 2 {
		hp, kn, an := kp[perception.KpLeftHip+side], kp[perception.KpLeftKnee+side], kp[perception.KpLeftAnkle+side]
		if hp.Visibility > 0.4 && kn.Visibility > 0.4 && an.Visibility > 0.4 {
			ok[side] = math.Hypot(hp.X-kn.X, hp.Y-kn.Y) >= 0.8*sw && math.Hypot(kn.X-an.X, kn.Y-an.Y) >= 0.9*sw
		}
	}
	return ok
}

// cutBelowHems finds, along each visible shin, where the trousers end:
// the first of two consecutive slices across the leg (from 0.35 of the
// knee-ankle length on) in which most pixels are off the trousers' colour.
// Below it, every pixel of the shoe zone near the leg's axis is marked off.
func cutBelowHems(pose *perception.Pose, shoes, off *raster.Plane, sw float64, hipsOK bool) {
	kp := pose.Keypoints
	w, h := off.W, off.H
	for side, ok := range legsPlausible(pose, sw, hipsOK) {
		if !ok {
			continue
		}
		kn, an := kp[perception.KpLeftKnee+side], kp[perception.KpLeftAnkle+side]
		dx, dy := an.X-kn.X, an.Y-kn.Y
		l := math.Hypot(dx, dy)
		if l < 1 {
			continue
		}
		ux, uy := dx/l, dy/l
		const t0, t1, n = 0.35, 1.8, 29
		var cnt, sum [n]float64
		proj := func(x, y int) (t, d float64) {
			px, py := float64(x)-kn.X, float64(y)-kn.Y
			return (px*ux + py*uy) / l, math.Abs(-px*uy + py*ux)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				if shoes.P[i] == 0 {
					continue
				}
				t, d := proj(x, y)
				if t < t0 || t >= t1 || d > 0.25*sw {
					continue
				}
				k := int((t - t0) / (t1 - t0) * n)
				cnt[k]++
				sum[k] += float64(off.P[i])
			}
		}
		hem := math.Inf(1)
		for k := 0; k+1 < n; k++ {
			if cnt[k] >= 20 && cnt[k+1] >= 20 && sum[k]/cnt[k] > 0.5 && sum[k+1]/cnt[k+1] > 0.5 {
				hem = t0 + float64(k)*(t1-t0)/n
				break
			}
		}
		if math.IsInf(hem, 1) {
			continue
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				if shoes.P[i] == 0 {
					continue
				}
				if t, d := proj(x, y); t > hem && d < 0.6*sw {
					off.P[i] = 1
				}
			}
		}
	}
}

// segDist2 is the squared distance from (x, y) to the segment a-b.
func segDist2(x, y, ax, ay, bx, by float64) float64 {
	dx, dy := bx-ax, by-ay
	l2 := dx*dx + dy*dy
	t := 0.0
	if l2 > 0 {
		t = math.Min(math.Max(((x-ax)*dx+(y-ay)*dy)/l2, 0), 1)
	}
	px, py := ax+t*dx-x, ay+t*dy-y
	return px*px + py*py
}

// fitModel fits a Lab colour model to the confident garment pixels that
// sel accepts; nil when fewer than 200 pixels qualify. Robust: the centre
// is the median and the spread 1.5 x the normalised median absolute
// deviation, so badges, prints and held objects do not widen it.
func fitModel(core, L, A, B, Cp, Hp *raster.Plane, sel func(i int) bool, count *int) *labModel {
	var vals [3][]float32
	step := 1
	if len(core.P) > 400_000 {
		step = 2
	}
	var all, bright [3][]float32
	var hx, hy float64
	var cs []float32
	for i := 0; i < len(core.P); i += step {
		if core.P[i] > 0.6 && sel(i) {
			if L.P[i] > 20 && Cp.P[i] > 0 {
				h := float64(Hp.P[i]) * math.Pi / 180
				hx, hy = hx+float64(Cp.P[i])*math.Cos(h), hy+float64(Cp.P[i])*math.Sin(h)
				cs = append(cs, Cp.P[i])
			}
			v := [3]float32{L.P[i], A.P[i], B.P[i]}
			for c := range 3 {
				all[c] = append(all[c], v[c])
				if v[0] > 20 {
					bright[c] = append(bright[c], v[c])
				}
			}
		}
	}
	// Chromaticity is reliable only on pixels that are not near black:
	// use those unless the garment itself is dark.
	vals = all
	if len(bright[0]) >= 200 && len(bright[0])*2 >= len(all[0]) {
		vals = bright
	}
	*count = len(vals[0])
	if len(vals[0]) < 200 {
		return nil
	}
	m := &labModel{}
	if len(cs) >= 200 {
		slices.Sort(cs)
		m.chroma = float64(cs[len(cs)/2])
		m.hue = hueDeg(hx, hy)
		m.chromatic = m.chroma > 20 && len(cs)*2 >= len(all[0])
	}
	dev := make([]float32, 0, len(vals[0]))
	for c := range 3 {
		v := vals[c]
		slices.Sort(v)
		med := float64(v[len(v)/2])
		dev = dev[:0]
		for _, x := range v {
			dev = append(dev, float32(math.Abs(float64(x)-med)))
		}
		slices.Sort(dev)
		mad := float64(dev[len(dev)/2]) * 1.4826
		floor := 3.0
		if c == 0 {
			floor = 12 // lightness varies with the shading
		}
		m.mean[c] = med
		m.std[c] = math.Max(mad*1.5, floor)
	}
	return m
}
