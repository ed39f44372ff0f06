package transfer

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
)

// body is the person analysis the transfer works from. Sides are image
// sides: L is the joint on the viewer's left.
type body struct {
	w, h  int
	img   *image.RGBA
	pose  *perception.Pose
	parse *perception.Parsing
	pm    *image.Gray // person mask

	shL, shR, elL, elR, wrL, wrR perception.Point
	hipL, hipR, kneeL, kneeR     perception.Point
	ankL, ankR                   perception.Point
	nose                         perception.Point
	face                         *perception.Face // the subject's detected face (nil: none found)
	shouldersGuessed             bool             // the face guard moved the pose's shoulders
	sw                           float64          // shoulder width (joints)
	up, right                    perception.Point // torso axis unit vectors
	torsoLen                     float64
	headR                        float64

	upper, lower *image.Gray // old upper / lower clothes regions
	front        *image.Gray // arms, hands, hair and face in front of a torso garment
	armCap       *image.Gray // capsules around the arms (where sleeves lie over the torso)
	hands        *image.Gray // hands and face (in front of sleeves too)
	chest, legs  garment.Lab
}

func kp(p *perception.Pose, i int) perception.Point {
	return perception.Point{X: p.Keypoints[i].X, Y: p.Keypoints[i].Y}
}

func add(a, b perception.Point) perception.Point { return perception.Point{X: a.X + b.X, Y: a.Y + b.Y} }
func sub(a, b perception.Point) perception.Point { return perception.Point{X: a.X - b.X, Y: a.Y - b.Y} }
func mul(a perception.Point, k float64) perception.Point {
	return perception.Point{X: a.X * k, Y: a.Y * k}
}
func mid(a, b perception.Point) perception.Point             { return mul(add(a, b), 0.5) }
func dist(a, b perception.Point) float64                     { return math.Hypot(a.X-b.X, a.Y-b.Y) }
func lerp(a, b perception.Point, t float64) perception.Point { return add(a, mul(sub(b, a), t)) }
func dot(a, b perception.Point) float64                      { return a.X*b.X + a.Y*b.Y }
func unit(a perception.Point) perception.Point {
	l := math.Hypot(a.X, a.Y)
	if l == 0 {
		return perception.Point{}
	}
	return mul(a, 1/l)
}

// analyzePerson runs the perception models on the person and derives the
// regions the transfer needs. A person that cannot be found is a job error.
func analyzePerson(ctx context.Context, p perception.Perception, img *image.RGBA) (*body, error) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	pose, err := p.Pose(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("tryon: pose: %w", err)
	}
	b := &body{w: w, h: h, img: img, pose: pose}
	k := pose.Keypoints
	vis := func(i int) bool { return k[i].Visibility >= 0.3 && k[i].Presence >= 0.3 }
	if pose.Presence < 0.5 || !vis(perception.KpLeftShoulder) || !vis(perception.KpRightShoulder) {
		return nil, pipelines.Failf("no person found in personImage: the pose model sees no person with visible shoulders (presence %.2f); use a photo of a person facing the camera", pose.Presence)
	}
	pm, err := p.PersonMask(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("tryon: person mask: %w", err)
	}
	if mask.Count(mask.Binary(pm, 128)) < w*h/50 {
		return nil, pipelines.Failf("no person found in personImage: the person mask covers %.1f%% of the image", 100*float64(mask.Count(mask.Binary(pm, 128)))/float64(w*h))
	}
	parse, err := p.Parse(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("tryon: parsing: %w", err)
	}
	b.pm, b.parse = pm, parse
	b.joints()
	if b.face, err = subjectFace(ctx, p, img); err != nil {
		return nil, err
	}
	if err := b.guardPose(); err != nil {
		return nil, err
	}
	ms, mh := mid(b.shL, b.shR), mid(b.hipL, b.hipR)
	b.torsoLen = dist(ms, mh)
	// A torso much shorter than the shoulders are wide means the hips are
	// out of frame or misplaced (a frontal adult's is about 1.3 to 1.6).
	if b.torsoLen < 1.05*b.sw || !vis(perception.KpLeftHip) || !vis(perception.KpRightHip) {
		// Hips out of frame or guessed: assume a standard torso.
		b.torsoLen = 1.45 * b.sw
		mh = add(ms, perception.Point{Y: b.torsoLen})
		b.hipL = add(b.shL, perception.Point{X: 0.15 * b.sw, Y: b.torsoLen})
		b.hipR = add(b.shR, perception.Point{X: -0.15 * b.sw, Y: b.torsoLen})
	}
	b.up = unit(sub(ms, mh))
	b.right = perception.Point{X: -b.up.Y, Y: b.up.X}
	b.headR = math.Max(0.3*b.sw, 1.3*dist(kp(pose, perception.KpLeftEar), kp(pose, perception.KpRightEar))/2+0.1*b.sw)
	b.regions()
	b.keepFace()
	return b, nil
}

// joints sets the body's joints from the pose, by image side: L is the
// joint on the viewer's left, the person's right side when facing the
// camera.
func (b *body) joints() {
	pose, k := b.pose, b.pose.Keypoints
	rs, ls := perception.KpRightShoulder, perception.KpLeftShoulder
	re, le := perception.KpRightElbow, perception.KpLeftElbow
	rw, lw := perception.KpRightWrist, perception.KpLeftWrist
	rh, lh := perception.KpRightHip, perception.KpLeftHip
	rk, lk := perception.KpRightKnee, perception.KpLeftKnee
	ra, la := perception.KpRightAnkle, perception.KpLeftAnkle
	if k[rs].X > k[ls].X {
		rs, ls, re, le, rw, lw = ls, rs, le, re, lw, rw
		rh, lh, rk, lk, ra, la = lh, rh, lk, rk, la, ra
	}
	b.shL, b.shR = kp(pose, rs), kp(pose, ls)
	b.elL, b.elR = kp(pose, re), kp(pose, le)
	b.wrL, b.wrR = kp(pose, rw), kp(pose, lw)
	b.hipL, b.hipR = kp(pose, rh), kp(pose, lh)
	b.kneeL, b.kneeR = kp(pose, rk), kp(pose, lk)
	b.ankL, b.ankR = kp(pose, ra), kp(pose, la)
	b.nose = kp(pose, perception.KpNose)
}

// medianLab is the per-channel median Lab of the pixels in a disc that the
// predicate accepts.
func (b *body) medianLab(c perception.Point, r float64, ok func(i int) bool) (garment.Lab, int) {
	var ls, as, bs []float64
	for y := int(c.Y - r); y <= int(c.Y+r); y++ {
		for x := int(c.X - r); x <= int(c.X+r); x++ {
			if x < 0 || y < 0 || x >= b.w || y >= b.h || math.Hypot(float64(x)-c.X, float64(y)-c.Y) > r {
				continue
			}
			i := y*b.w + x
			if !ok(i) {
				continue
			}
			o := y*b.img.Stride + x*4
			l := garment.ToLab(b.img.Pix[o], b.img.Pix[o+1], b.img.Pix[o+2])
			ls, as, bs = append(ls, l.L), append(as, l.A), append(bs, l.B)
		}
	}
	return garment.Lab{L: med(ls), A: med(as), B: med(bs)}, len(ls)
}

func med(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := append([]float64(nil), v...)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return c[len(c)/2]
}

// capsule rasterises the union of discs along a polyline with radii per
// point (linearly interpolated).
func capsule(m *image.Gray, pts []perception.Point, radii []float64) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for i := 1; i < len(pts); i++ {
		p0, p1 := pts[i-1], pts[i]
		r0, r1 := radii[i-1], radii[i]
		rmax := math.Max(r0, r1)
		x0 := max(int(math.Min(p0.X, p1.X)-rmax), 0)
		x1 := min(int(math.Max(p0.X, p1.X)+rmax)+1, w-1)
		y0 := max(int(math.Min(p0.Y, p1.Y)-rmax), 0)
		y1 := min(int(math.Max(p0.Y, p1.Y)+rmax)+1, h-1)
		d := sub(p1, p0)
		l2 := dot(d, d)
		for y := y0; y <= y1; y++ {
			for x := x0; x <= x1; x++ {
				q := perception.Point{X: float64(x) + 0.5, Y: float64(y) + 0.5}
				t := 0.0
				if l2 > 0 {
					t = math.Min(math.Max(dot(sub(q, p0), d)/l2, 0), 1)
				}
				c := lerp(p0, p1, t)
				if dist(q, c) <= r0+(r1-r0)*t {
					m.Pix[y*m.Stride+x] = 255
				}
			}
		}
	}
}

func disc(m *image.Gray, c perception.Point, r float64) {
	capsule(m, []perception.Point{c, c}, []float64{r, r})
}

// regions splits the clothes into the old upper and lower garments by
// colour (the chest's and the thighs' clothes colours) or, when they match,
// at the waist; and builds the masks of what lies in front of a garment.
func (b *body) regions() {
	chestC := lerp(mid(b.shL, b.shR), mid(b.hipL, b.hipR), chestLevel)
	split := b.clothesColours(chestC)
	upper, lower := b.splitClothes(split)
	w, h := b.w, b.h
	up := mask.FillHoles(mask.Close(mask.Open(upper, 2), 3))
	b.upper = b.grow(keepComponentNear(up, chestC), b.chest)
	b.lower = mask.RemoveSmall(mask.Close(mask.Open(lower, 2), 3), w*h/400)
	if split {
		b.lower = b.grow(b.lower, b.legs)
	}
	b.frontMasks()
}

// Old-garment tuning (lengths in the body's shoulder widths, b.sw).
const (
	// chestLevel: the chest's colour is sampled this share of the way from
	// the shoulders to the hips, within chestRadius.
	chestLevel  = 0.35
	chestRadius = 0.15
	// thighLevel: the thighs' colour is sampled this share of the way from
	// hip to knee, within thighRadius.
	thighLevel  = 0.55
	thighRadius = 0.1
	// splitDeltaE: chest and thigh colours further apart than this
	// (CIEDE2000) are two garments split by colour; else at the waist.
	splitDeltaE = 10
	// waistLevel: without a colour split the waist lies this share of the
	// way from the shoulders to the hips.
	waistLevel = 0.85
)

// clothesAt says whether pixel i is clothes (the parser's clothes score
// beats skin and hair, inside the person).
func (b *body) clothesAt(i int) bool {
	par := b.parse
	c := par.Clothes.Pix[i]
	return c >= 100 && c >= par.Skin.Pix[i] && c >= par.Hair.Pix[i] && b.pm.Pix[i] >= 64
}

// clothesColours sets the chest's (at chestC) and the thighs' clothes
// colours and says whether they differ enough to split the garments by
// colour.
func (b *body) clothesColours(chestC perception.Point) bool {
	par := b.parse
	b.chest, _ = b.medianLab(chestC, chestRadius*b.sw, b.clothesAt)
	thighs := []perception.Point{lerp(b.hipL, b.kneeL, thighLevel), lerp(b.hipR, b.kneeR, thighLevel)}
	var legN int
	var ll, la, lb []float64
	for _, t := range thighs {
		l, n := b.medianLab(t, thighRadius*b.sw, func(i int) bool { return b.pm.Pix[i] >= 128 && par.Skin.Pix[i] < 200 || b.clothesAt(i) })
		if n > 0 {
			ll, la, lb = append(ll, l.L), append(la, l.A), append(lb, l.B)
			legN += n
		}
	}
	if legN > 0 {
		b.legs = garment.Lab{L: med(ll), A: med(la), B: med(lb)}
	}
	return legN > 0 && garment.DeltaE2000Lab(b.chest, b.legs) > splitDeltaE
}

// garmentBounds returns the torso and leg capsules that bound where each
// garment can be.
func (b *body) garmentBounds() (torso, legs *image.Gray) {
	ms, mh := mid(b.shL, b.shR), mid(b.hipL, b.hipR)
	torso = image.NewGray(image.Rect(0, 0, b.w, b.h))
	hw := 0.75 * b.sw
	capsule(torso, []perception.Point{add(ms, mul(b.up, 0.1*b.sw)), lerp(ms, mh, 1.15)}, []float64{hw, hw})
	legs = image.NewGray(image.Rect(0, 0, b.w, b.h))
	for _, lg := range [][3]perception.Point{{b.hipL, b.kneeL, b.ankL}, {b.hipR, b.kneeR, b.ankR}} {
		capsule(legs, []perception.Point{lg[0], lg[1], lg[2]}, []float64{0.45 * b.sw, 0.32 * b.sw, 0.25 * b.sw})
	}
	return torso, legs
}

// splitClothes labels the person's pixels as the old upper or lower
// garment: by colour (near the chest's or the thighs' clothes colour,
// within the torso or leg capsules) when split, else the clothes above or
// below the waist.
func (b *body) splitClothes(split bool) (upper, lower *image.Gray) {
	w, h := b.w, b.h
	torso, legs := b.garmentBounds()
	upper = image.NewGray(image.Rect(0, 0, w, h))
	lower = image.NewGray(image.Rect(0, 0, w, h))
	waistY := dot(lerp(mid(b.shL, b.shR), mid(b.hipL, b.hipR), waistLevel), b.up)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			if b.pm.Pix[i] < 96 {
				continue
			}
			o := y*b.img.Stride + x*4
			isCl := b.clothesAt(i)
			var lab garment.Lab
			if split || !isCl {
				lab = garment.ToLab(b.img.Pix[o], b.img.Pix[o+1], b.img.Pix[o+2])
			}
			if split {
				dc := labDist(lab, b.chest)
				dl := labDist(lab, b.legs)
				switch {
				case (isCl || torso.Pix[i] >= 128 && dc < 12) && dc < dl && dc < 30:
					upper.Pix[i] = 255
				case (isCl && dl < 22 || legs.Pix[i] >= 128 && dl < 14) && dl <= dc:
					lower.Pix[i] = 255
				}
				continue
			}
			if !isCl {
				continue
			}
			if dot(perception.Point{X: float64(x), Y: float64(y)}, b.up) > waistY {
				upper.Pix[i] = 255
			} else {
				lower.Pix[i] = 255
			}
		}
	}
	return upper, lower
}

// frontMasks builds what lies in front of a torso garment: arms and hands
// (skin, or anything that is not the old top inside the arm capsules),
// hair and the face (b.front), the hands alone (b.hands), and the region
// where sleeves lie over the torso (b.armCap).
func (b *body) frontMasks() {
	w, h := b.w, b.h
	par := b.parse
	arms := image.NewGray(image.Rect(0, 0, w, h))
	hands := image.NewGray(image.Rect(0, 0, w, h))
	for _, a := range [][3]perception.Point{{b.shL, b.elL, b.wrL}, {b.shR, b.elR, b.wrR}} {
		capsule(arms, []perception.Point{a[0], a[1], a[2]}, []float64{0.16 * b.sw, 0.14 * b.sw, 0.12 * b.sw})
		hc := add(a[2], mul(sub(a[2], a[1]), 0.35))
		disc(hands, hc, 0.2*b.sw)
		capsule(arms, []perception.Point{a[2], hc}, []float64{0.12 * b.sw, 0.22 * b.sw})
	}
	disc(hands, b.nose, b.headR)
	b.armCap = image.NewGray(image.Rect(0, 0, w, h))
	for _, a := range [][3]perception.Point{{b.shL, b.elL, b.wrL}, {b.shR, b.elR, b.wrR}} {
		capsule(b.armCap, []perception.Point{a[0], a[1], a[2]}, []float64{0.2 * b.sw, 0.17 * b.sw, 0.14 * b.sw})
	}
	front := image.NewGray(image.Rect(0, 0, w, h))
	hm := image.NewGray(image.Rect(0, 0, w, h))
	for i := range front.Pix {
		skin := par.Skin.Pix[i] >= 128 && par.Skin.Pix[i] >= par.Clothes.Pix[i]
		hair := par.Hair.Pix[i] >= 128
		inPerson := b.pm.Pix[i] >= 128
		if arms.Pix[i] >= 128 && (skin || inPerson && b.upper.Pix[i] < 128) {
			front.Pix[i] = 255
		}
		if hands.Pix[i] >= 128 && (skin || hair || inPerson && b.upper.Pix[i] < 128) {
			front.Pix[i] = 255
			hm.Pix[i] = 255
		}
		if hair {
			front.Pix[i] = 255
		}
	}
	b.front = mask.Open(front, 1.5)
	b.hands = mask.Open(hm, 1.5)
}

func labDist(a, b garment.Lab) float64 {
	return math.Sqrt((a.L-b.L)*(a.L-b.L)*0.5 + (a.A-b.A)*(a.A-b.A) + (a.B-b.B)*(a.B-b.B))
}

// keepComponentNear keeps the component containing (or nearest to) c.
func keepComponentNear(m *image.Gray, c perception.Point) *image.Gray {
	lab, sizes := mask.Components(m)
	w, h := m.Rect.Dx(), m.Rect.Dy()
	best, bestD := int32(0), math.Inf(1)
	for i, l := range lab {
		if l == 0 || sizes[l] < 50 {
			continue
		}
		d := math.Hypot(float64(i%w)-c.X, float64(i/w)-c.Y)
		if d < bestD {
			best, bestD = l, d
		}
	}
	out := image.NewGray(image.Rect(0, 0, w, h))
	if best == 0 {
		return out
	}
	for i, l := range lab {
		if l == best {
			out.Pix[i] = 255
		}
	}
	return out
}

// grow adds the pixels near the region (within 8 px) whose colour is close
// to the garment's, so that the soft edges of the parsing do not leave a
// fringe of the old garment.
func (b *body) grow(m *image.Gray, c garment.Lab) *image.Gray {
	near := mask.Dilate(m, 8)
	out := image.NewGray(m.Rect)
	copy(out.Pix, m.Pix)
	for i, v := range near.Pix {
		if v < 128 || m.Pix[i] >= 128 || b.pm.Pix[i] < 32 {
			continue
		}
		o := i * 4
		if labDist(garment.ToLab(b.img.Pix[o], b.img.Pix[o+1], b.img.Pix[o+2]), c) < 18 {
			out.Pix[i] = 255
		}
	}
	return mask.Close(out, 2)
}

// growLike extends an old garment region geodesically (rings of 4 px, up
// to a quarter shoulder width) over the person's pixels whose colour
// matches the garment's (ref), outside other and what lies in front: the
// parsing often misses a foreshortened shin, a knee beside a hand or the
// underside of a sleeve, and those patches of the old garment would
// otherwise stay. A pixel is the person's where the person mask or the
// clothes parsing says so: the segmentation misses a seated man's shin
// in khaki that the parsing calls clothes.
func (b *body) growLike(m *image.Gray, ref garment.Lab, other *image.Gray) *image.Gray {
	out := image.NewGray(m.Rect)
	copy(out.Pix, m.Pix)
	rings := max(1, int(0.25*b.sw/4))
	for range rings {
		ring := mask.Dilate(out, 4)
		added := 0
		for i, v := range ring.Pix {
			onPerson := b.pm.Pix[i] >= 96 || b.parse.Clothes.Pix[i] >= 128
			if v < 128 || out.Pix[i] >= 128 || !onPerson || b.front.Pix[i] >= 128 || other.Pix[i] >= 128 {
				continue
			}
			if b.like(i, ref) {
				out.Pix[i] = 255
				added++
			}
		}
		if added == 0 {
			break
		}
	}
	return mask.Close(out, 2)
}

// like reports whether pixel i has the garment colour ref: chroma close,
// lightness within the range of the garment's own shading (folds, the
// shadowed side of a leg).
func (b *body) like(i int, ref garment.Lab) bool {
	o := i * 4
	c := garment.ToLab(b.img.Pix[o], b.img.Pix[o+1], b.img.Pix[o+2])
	dL := c.L - ref.L
	return math.Hypot(c.A-ref.A, c.B-ref.B) < 8 && dL > -30 && dL < 12
}

// frontOfBottoms narrows what lies in front to skin and hair where it
// overlaps the old lower garment: the arm capsules' "anything that is not
// the old top" would otherwise keep the old trousers under a hand or at a
// knee beside it.
func (b *body) frontOfBottoms() {
	if b.parse == nil || b.parse.Skin == nil {
		return
	}
	par := b.parse
	f := image.NewGray(b.front.Rect)
	copy(f.Pix, b.front.Pix)
	for i, v := range f.Pix {
		if v < 128 || b.lower.Pix[i] < 128 {
			continue
		}
		skin := par.Skin.Pix[i] >= 128 && par.Skin.Pix[i] >= par.Clothes.Pix[i]
		hair := par.Hair != nil && par.Hair.Pix[i] >= 128
		o := i * 4
		trouser := labDist(garment.ToLab(b.img.Pix[o], b.img.Pix[o+1], b.img.Pix[o+2]), b.legs) < 12
		if !hair && (!skin || trouser) {
			f.Pix[i] = 0
		}
	}
	b.front = mask.Open(f, 1.5)
}
