package repose

import (
	"context"
	"errors"
	"image"
	"math"
	"sort"

	"fashiond/cv"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
)

// The re-posing renderer: the person is cut into layers (the body — torso,
// head and legs — and each arm), each layer is a triangle grid over the
// source whose vertices follow the skeleton's bones by linear blend skinning
// (weights from the distance to each bone's capsule), and the layers are
// drawn over the background plate far to near. Where an arm lay over the
// body, the body layer's texture is inpainted so that moving the arm does
// not leave a hole.

// bone is one skinning bone in source space with its source-to-target map.
type bone struct {
	a, b perception.Point   // segment (source)
	poly []perception.Point // torso quad instead of a segment
	r    float64            // capsule radius: distances are divided by it
	part int                // partBody, or the limb it belongs to
	hand bool               // the hand bone of an arm
	head bool               // the head bone (neck to above the face)
	ease float64            // head: share of the bone, from the neck end, over which its map eases in
	xf   [6]float64         // source -> target affine [a b c; d e f]
}

func apply(m [6]float64, p perception.Point) perception.Point {
	return perception.Point{X: m[0]*p.X + m[1]*p.Y + m[2], Y: m[3]*p.X + m[4]*p.Y + m[5]}
}

func segDist(p, a, b perception.Point) float64 {
	ab := sub(b, a)
	l2 := dot(ab, ab)
	t := 0.0
	if l2 > 1e-9 {
		t = math.Max(0, math.Min(1, dot(sub(p, a), ab)/l2))
	}
	dx, dy := p.X-a.X-ab.X*t, p.Y-a.Y-ab.Y*t
	return math.Sqrt(dx*dx + dy*dy)
}

func polyDist(p perception.Point, poly []perception.Point) float64 {
	inside := false
	d := math.Inf(1)
	n := len(poly)
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		a, b := poly[j], poly[i]
		if (a.Y > p.Y) != (b.Y > p.Y) && p.X < (b.X-a.X)*(p.Y-a.Y)/(b.Y-a.Y)+a.X {
			inside = !inside
		}
		d = math.Min(d, segDist(p, a, b))
	}
	if inside {
		return 0
	}
	return d
}

// mapPoint is p through the bone's map. The head's map (the face's
// rigid turn and shift) is eased in from the neck end, where the neck
// stays on the shoulders, to full at the chin (b.ease of the bone's
// length): moved whole, the neck dragged the collar and the top of the
// shoulders with it and tore notches there (fashn_garment and
// codait_man_standing "looking left"); eased in past the chin, the jaw
// moved less than the eyes and the face was sheared sideways
// (codait_man_standing "looking left/right").
func (b *bone) mapPoint(p perception.Point) perception.Point {
	q := apply(b.xf, p)
	if !b.head || b.ease <= 0 {
		return q
	}
	ax := sub(b.b, b.a)
	l2 := dot(ax, ax)
	if l2 == 0 {
		return q
	}
	t := math.Min(1, math.Max(0, dot(sub(p, b.a), ax)/l2/b.ease))
	t = t * t * (3 - 2*t)
	return add(p, scale(sub(q, p), t))
}

// slideHeadAlongTop turns the head bone's map into a sideways shift, of
// the face centre's: for a head cut by the top edge (the body layer
// reaches it) the cut must stay on the edge, and a rotation moves one
// side of it down into the picture; pinToEdges holding it back there
// sheared the face (codait_man_standing "looking right", face_texture
// 0.89 against 0.98 with the shift alone).
func slideHeadAlongTop(bones []bone) {
	for k := range bones {
		b := &bones[k]
		if !b.head {
			continue
		}
		c := add(b.a, scale(sub(b.b, b.a), faceCentreOnHead))
		b.xf = [6]float64{1, 0, apply(b.xf, c).X - c.X, 0, 1, 0}
	}
}

// faceCentreOnHead is where on the head bone, from its neck end, the
// face joints' centre lies (buildBones: the bone runs from 0.3 to 1.45
// of the shoulders-to-face-centre vector).
const faceCentreOnHead = 0.7 / 1.15

// Head map easing, in shares of the head bone's length from its neck
// end: the map is full at the chin, estimated as the mouth plus
// chinBelowMouth nose-to-mouth distances, and the easing band is held
// between minNeckEase and maxNeckEase (a chin the face keypoints place
// at the neck end, or a face seen from behind).
const (
	chinBelowMouth = 1.4
	minNeckEase    = 0.08
	maxNeckEase    = 0.3
)

// neckEase is the share of the head bone a->b, from a, at which the
// face's chin lies (the source's face joints J), within the limits.
func neckEase(a, b perception.Point, J *[33]perception.Point) float64 {
	ax := sub(b, a)
	l2 := dot(ax, ax)
	if l2 == 0 {
		return maxNeckEase
	}
	m := mid(J[9], J[10])
	chin := add(m, scale(sub(m, J[0]), chinBelowMouth))
	return math.Min(maxNeckEase, math.Max(minNeckEase, dot(sub(chin, a), ax)/l2))
}

// score is the distance to the bone in radii.
func (b *bone) score(p perception.Point) float64 {
	if b.poly != nil {
		// Inside the torso a limb's core (score < 0.7) still wins: an arm
		// lying across the chest belongs to the arm.
		return 0.7 + polyDist(p, b.poly)/b.r
	}
	return segDist(p, b.a, b.b) / b.r
}

// similarity2 maps a->a2 and b->b2 exactly (rotation, scale, translation).
func similarity2(a, b, a2, b2 perception.Point) [6]float64 {
	m, err := cv.SimilarityFromPointsF([][2]float64{{a.X, a.Y}, {b.X, b.Y}}, [][2]float64{{a2.X, a2.Y}, {b2.X, b2.Y}})
	if err != nil {
		t := sub(a2, a)
		return [6]float64{1, 0, t.X, 0, 1, t.Y}
	}
	return m
}

// rigidLSQ fits a rotation and translation (no scale, no squeeze) by
// least squares: the best similarity with its scale set to 1, about the
// points' centroids.
func rigidLSQ(src, dst []perception.Point) [6]float64 {
	fs := make([][2]float64, len(src))
	fd := make([][2]float64, len(dst))
	var ms, md perception.Point
	for i := range src {
		fs[i] = [2]float64{src[i].X, src[i].Y}
		fd[i] = [2]float64{dst[i].X, dst[i].Y}
		ms, md = add(ms, src[i]), add(md, dst[i])
	}
	sim, err := cv.SimilarityFromPointsF(fs, fd)
	s := math.Hypot(sim[0], sim[3])
	if err != nil || s <= 0 {
		return [6]float64{1, 0, 0, 0, 1, 0}
	}
	ms, md = scale(ms, 1/float64(len(src))), scale(md, 1/float64(len(dst)))
	c, sn := sim[0]/s, sim[3]/s
	return [6]float64{c, -sn, md.X - (c*ms.X - sn*ms.Y), sn, c, md.Y - (sn*ms.X + c*ms.Y)}
}

// affineLSQ fits a general affine map by least squares; when the points are
// nearly collinear, or the fit distorts more than 2x, it falls back to the
// best similarity.
func affineLSQ(src, dst []perception.Point) [6]float64 {
	fs := make([][2]float64, len(src))
	fd := make([][2]float64, len(dst))
	for i := range src {
		fs[i] = [2]float64{src[i].X, src[i].Y}
		fd[i] = [2]float64{dst[i].X, dst[i].Y}
	}
	sim, serr := cv.SimilarityFromPointsF(fs, fd)
	if serr != nil {
		sim = [6]float64{1, 0, 0, 0, 1, 0}
	}
	n := float64(len(src))
	var mx, my perception.Point
	for i := range src {
		mx = add(mx, src[i])
		my = add(my, dst[i])
	}
	mx, my = scale(mx, 1/n), scale(my, 1/n)
	var sxx, sxy, syy, ux, uy, vx, vy float64
	for i := range src {
		p, q := sub(src[i], mx), sub(dst[i], my)
		sxx += p.X * p.X
		sxy += p.X * p.Y
		syy += p.Y * p.Y
		ux += p.X * q.X
		uy += p.Y * q.X
		vx += p.X * q.Y
		vy += p.Y * q.Y
	}
	det := sxx*syy - sxy*sxy
	if det < 1e-6*(sxx+syy)*(sxx+syy) || len(src) < 3 {
		return sim
	}
	a := (ux*syy - uy*sxy) / det
	b := (uy*sxx - ux*sxy) / det
	d := (vx*syy - vy*sxy) / det
	e := (vy*sxx - vx*sxy) / det
	// Singular values of [a b; d e] against the similarity's scale.
	s := math.Hypot(sim[0], sim[3])
	p1 := math.Hypot(a+e, d-b) / 2
	p2 := math.Hypot(a-e, d+b) / 2
	smax, smin := p1+p2, math.Abs(p1-p2)
	if s <= 0 || smax > 2*s || smin < 0.5*s || a*e-b*d <= 0 {
		return sim
	}
	return [6]float64{a, b, my.X - a*mx.X - b*mx.Y, d, e, my.Y - d*mx.X - e*mx.Y}
}

// buildBones derives the skinning bones from the source skeleton S and its
// re-posed version O.
func buildBones(S, O Skeleton, rel reliability) []bone {
	sw := norm(sub(S.Joints[11], S.Joints[12]))
	spine := norm(sub(S.MidShoulder(), S.MidHip()))
	U := math.Max(sw, 0.6*spine)
	if U < 4 {
		U = 4
	}
	J, T := S.Joints, O.Joints
	var bs []bone
	quad := []int{11, 12, 24, 23}
	var qs, qt []perception.Point
	for _, j := range quad {
		qs = append(qs, J[j])
		qt = append(qt, T[j])
	}
	xf := affineLSQ(qs, qt)
	// The pelvis continues below the hip joints; where the thighs are not
	// seen it stands for everything below the hips.
	down := unit(sub(S.MidHip(), S.MidShoulder()))
	ext := 0.12
	if !rel.thigh[0] && !rel.thigh[1] {
		// No legs seen: everything below the hips follows the pelvis.
		ext = 10
	} else if !rel.thigh[0] || !rel.thigh[1] {
		ext = 0.3
	}
	poly := append([]perception.Point(nil), qs...)
	// The shoulder joints sit inside the upper arms: pull the quad's top
	// in a little. The waist is wider than the hip joints.
	in := scale(unit(sub(qs[1], qs[0])), 0.08*sw)
	poly[0] = add(poly[0], in)
	poly[1] = sub(poly[1], in)
	out := scale(unit(sub(qs[3], qs[2])), 0.15*norm(sub(qs[3], qs[2])))
	poly[2] = add(sub(poly[2], out), scale(down, ext*spine))
	poly[3] = add(add(poly[3], out), scale(down, ext*spine))
	bs = append(bs, bone{poly: poly, r: 0.16 * U, xf: xf})
	// Head: a capsule from the neck to above the face.
	var fs, ft []perception.Point
	var hc perception.Point
	for _, j := range faceJoints {
		fs = append(fs, J[j])
		ft = append(ft, T[j])
		hc = add(hc, J[j])
	}
	hc = scale(hc, 1/float64(len(faceJoints)))
	sh := S.MidShoulder()
	ear := norm(sub(J[7], J[8]))
	top := add(hc, scale(sub(hc, sh), 0.45))
	neck := add(sh, scale(sub(hc, sh), 0.3))
	bs = append(bs, bone{a: neck, b: top, r: math.Max(0.6*ear, 0.18*U), head: true, ease: neckEase(neck, top, &J), xf: rigidLSQ(fs, ft)})
	seg := func(a, b int, r float64, side int) {
		bs = append(bs, bone{a: J[a], b: J[b], r: r * U, part: side, xf: similarity2(J[a], J[b], T[a], T[b])})
	}
	handEnd := func(w int, ends []int, side int) {
		var c, ct perception.Point
		for _, j := range ends {
			c = add(c, J[j])
			ct = add(ct, T[j])
		}
		c, ct = scale(c, 1/float64(len(ends))), scale(ct, 1/float64(len(ends)))
		tip := add(J[w], scale(sub(c, J[w]), 1.6))
		tipT := add(T[w], scale(sub(ct, T[w]), 1.6))
		bs = append(bs, bone{a: J[w], b: tip, r: 0.11 * U, part: side, hand: true, xf: similarity2(J[w], tip, T[w], tipT)})
	}
	seg(11, 13, 0.16, partArmL)
	seg(13, 15, 0.12, partArmL)
	handEnd(15, leftHand, partArmL)
	seg(12, 14, 0.16, partArmR)
	seg(14, 16, 0.12, partArmR)
	handEnd(16, rightHand, partArmR)
	for i, l := range []limbIdx{legOf(sideLeft), legOf(sideRight)} {
		part := partLegL + i
		if rel.thigh[i] {
			seg(l.root, l.mid, 0.24, part)
		}
		if rel.shin[i] {
			seg(l.mid, l.end, 0.16, part)
		}
		if rel.foot[i] {
			seg(l.end, extremities(l.end)[1], 0.11, part)
		}
	}
	return bs
}

// reliability says which leg bones of the source the pose model really
// sees (index 0 left, 1 right). Legs out of the frame get guessed joints
// that would drag the clothes around; their bones are left out.
type reliability struct{ thigh, shin, foot [2]bool }

func legReliability(p *perception.Pose, S Skeleton) reliability {
	var r reliability
	spine := norm(sub(S.MidShoulder(), S.MidHip()))
	k := p.Keypoints
	for i, l := range []limbIdx{legOf(sideLeft), legOf(sideRight)} {
		thigh := norm(sub(S.Joints[l.mid], S.Joints[l.root]))
		shin := norm(sub(S.Joints[l.end], S.Joints[l.mid]))
		// A seen thigh runs well down from the hip, or is long (a seated
		// side view); a short one ending beside the hip is a guess.
		drop := dot(sub(S.Joints[l.mid], S.Joints[l.root]), unit(sub(S.MidHip(), S.MidShoulder())))
		r.thigh[i] = k[l.mid].Visibility >= 0.5 && thigh >= 0.6*spine && (drop >= 0.45*spine || thigh >= 0.7*spine)
		r.shin[i] = r.thigh[i] && k[l.end].Visibility >= 0.5 && shin >= 0.35*spine
		r.foot[i] = r.shin[i] && k[extremities(l.end)[1]].Visibility >= 0.5
	}
	return r
}

// Parts of the person, one layer each.
const (
	partBody = iota // torso, head, and the legs when unseen
	partArmL
	partArmR
	partLegL
	partLegR
	nParts
)

func isArm(part int) bool { return part == partArmL || part == partArmR }
func isLeg(part int) bool { return part == partLegL || part == partLegR }

// limbOfPart is the limb's joints.
func limbOfPart(part int) limbIdx {
	switch part {
	case partArmL:
		return armOf(sideLeft)
	case partArmR:
		return armOf(sideRight)
	case partLegL:
		return legOf(sideLeft)
	}
	return legOf(sideRight)
}

// layer is one re-posed piece of the person.
type layer struct {
	tex   *image.RGBA // source texture
	alpha []uint8     // source coverage, w*h
	part  int
	z     float64 // depth for ordering (larger is farther)
}

// Rendered is a re-posed person.
type Rendered struct {
	// Image is the person re-posed over the background plate.
	Image *image.RGBA
	// Alpha is the re-posed person's coverage.
	Alpha *image.Gray
	// Target is the skeleton the person was moved to (retargeted to the
	// source's proportions), in image pixels.
	Target Skeleton
	// CarriedBackground is the largest share, over the arms the target
	// moves, of an arm layer's pixels that match the background plate
	// (plateLike): background the person mask took in, carried with
	// the arm.
	CarriedBackground float64
}

// Repose moves the person of src into the target skeleton's joint angles
// (retargeted to the source's bone lengths, anchored at the hips) by a
// skeleton-driven mesh warp, over src.Background. p runs the pose model when
// src carries no pose.
func Repose(ctx context.Context, p perception.Perception, src *scene.Scene, target Skeleton) (*image.RGBA, error) {
	r, err := ReposeDetail(ctx, p, src, target)
	if err != nil {
		return nil, err
	}
	return r.Image, nil
}

// ReposeDetail is Repose that also returns the person's alpha and the
// retargeted skeleton.
func ReposeDetail(ctx context.Context, p perception.Perception, src *scene.Scene, target Skeleton) (*Rendered, error) {
	r, err := NewReposer(ctx, p, src)
	if err != nil {
		return nil, err
	}
	return r.Repose(ctx, target)
}

// Reposer holds what re-posing one source needs whatever the target: the
// source skeleton, the person cut into part layers and the inpainted
// textures under the limbs. Make one per source and call Repose per pose.
type Reposer struct {
	src             *scene.Scene
	S               Skeleton
	rel             reliability
	img             *image.RGBA
	cov             [][]uint8 // per part coverage, source pixels
	bodyTex, legTex *image.RGBA
	// plate is the background plate with its fill matched to the photo
	// round it (matchPlate).
	plate *image.RGBA
	// armBg is each arm layer's share of pixels that match the plate
	// (plateLike), by arm (left, right).
	armBg [2]float64
}

// NewReposer prepares src for re-posing. p runs the pose model when src
// carries no pose and the skin parsing that assigns bare hands to arms.
func NewReposer(ctx context.Context, p perception.Perception, src *scene.Scene) (*Reposer, error) {
	if src == nil || src.Image == nil || src.PersonMask == nil || src.Background == nil {
		return nil, errors.New("no scene to re-pose")
	}
	if !src.HasPerson {
		return nil, errors.New("no person found in the source image")
	}
	pose := src.Pose
	if pose == nil {
		if p == nil {
			return nil, errors.New("no source pose and no pose model")
		}
		var err error
		if pose, err = p.Pose(ctx, src.Image); err != nil {
			return nil, err
		}
	}
	b := src.Image.Rect
	S := AllKnown(SkeletonFromPose(pose, b.Dx(), b.Dy()))
	if _, err := newFrame(S); err != nil {
		return nil, err
	}
	var skin *image.Gray
	if p != nil {
		if pr, err := p.Parse(ctx, src.Image); err == nil && pr.Skin != nil && pr.Skin.Rect.Dx() == b.Dx() && pr.Skin.Rect.Dy() == b.Dy() {
			skin = pr.Skin
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	r := &Reposer{src: src, S: S, rel: legReliability(pose, S), img: raster.RGBA(src.Image)}
	if err := r.layers(ctx, skin); err != nil {
		return nil, err
	}
	r.plate = matchPlate(r.img, raster.RGBA(src.Background), src.HoleMask)
	return r, nil
}

// Repose renders the person in the target's joint angles (retargeted to
// the source's bone lengths, anchored at the hips).
func (r *Reposer) Repose(ctx context.Context, target Skeleton) (*Rendered, error) {
	return r.render(ctx, Retarget(target, r.S))
}

// layers cuts the person into part layers. skin (optional) is the skin
// probability: bare hands and forearms near an arm go to the arm. The
// bones' geometry depends on the source only (the target changes their
// maps), so the source skeleton stands in for the target here.
func (r *Reposer) layers(ctx context.Context, skin *image.Gray) error {
	S, rel, src, img := r.S, r.rel, r.src, r.img
	w, h := img.Rect.Dx(), img.Rect.Dy()
	bones := buildBones(S, S, rel)
	pm := src.PersonMask
	label, armScore := labelPixels(bones, pm, skin, w, h)
	// Bare skin connected to an arm's skin (hands the pose model places
	// badly, forearms) belongs to the arm.
	if skin != nil {
		growSkin(label, armScore, skin, pm, w, h)
	}
	r.armBg = plateLike(label, img, raster.RGBA(src.Background), w)
	cov, limbMask, armMask := partCoverage(bones, label, pm, w, h)
	if err := ctx.Err(); err != nil {
		return err
	}
	bodyTex, legTex := img, img
	if any255(limbMask.Pix) {
		t, err := inpaintHalf(img, scene.Dilate(limbMask, 2))
		if err != nil {
			return err
		}
		bodyTex = t
	}
	if any255(armMask.Pix) {
		t, err := inpaintHalf(img, scene.Dilate(armMask, 2))
		if err != nil {
			return err
		}
		legTex = t
	}
	bodyUnderLimbs(cov, label, w, h)
	for k := 1; k < nParts; k++ {
		blur1(cov[k], w, h)
	}
	r.cov, r.bodyTex, r.legTex = cov, bodyTex, legTex
	return nil
}

// Part labelling tuning, in capsule radii (a bone's score).
const (
	// armOverLeg: inside an arm's capsule (score under this) the arm wins
	// over a leg (an arm resting on a thigh), never over the torso.
	armOverLeg = 1
	// handSkinMax: a hand pixel whose skin probability is under this
	// (0..255) is clothes it rests on; it goes to the body or a leg
	// scoring under handToBody.
	handSkinMax = 77
	handToBody  = 2
	// limbReach: a limb's pixels scoring this or more go to the body.
	limbReach = 3
	// faceReach: pixels this close to the head bone are never a hand.
	faceReach = 1.2
	// underReach: a limb pixel within this of another part's capsule is
	// also that part's (the part beneath keeps it, inpainted).
	underReach = 1
)

// bestScores fills best with each part's lowest bone score at p, and
// byHand with whether that bone is a hand; it returns the best part.
func bestScores(bones []bone, p perception.Point, best *[nParts]float64, byHand *[nParts]bool) int {
	for k := range best {
		best[k] = math.Inf(1)
	}
	for k := range bones {
		if s := bones[k].score(p); s < best[bones[k].part] {
			best[bones[k].part] = s
			if byHand != nil {
				byHand[bones[k].part] = bones[k].hand
			}
		}
	}
	lab := 0
	for k := 1; k < nParts; k++ {
		if best[k] < best[lab] {
			lab = k
		}
	}
	return lab
}

// choosePart refines the nearest part lab of a pixel: an arm wins over a
// leg inside its capsule, a hand over non-skin (lowSkin) goes to the body
// or a leg beneath, and what lies far from every limb is the body.
func choosePart(lab int, best *[nParts]float64, byHand *[nParts]bool, lowSkin bool) int {
	for _, arm := range []int{partArmL, partArmR} {
		if isLeg(lab) && best[arm] < armOverLeg && best[arm] < best[partArmL+partArmR-arm] {
			lab = arm
		}
	}
	if isArm(lab) && byHand[lab] && lowSkin {
		alt := partBody
		for _, leg := range []int{partLegL, partLegR} {
			if best[leg] < best[alt] {
				alt = leg
			}
		}
		if best[alt] < handToBody {
			lab = alt
		}
	}
	if lab != partBody && best[lab] >= limbReach {
		lab = partBody
	}
	return lab
}

// labelPixels labels the person's pixels (pm) by their nearest bone in
// capsule radii (-1 outside the person), and returns with them each
// pixel's score to the left and right arm (99 on the face: never a hand).
func labelPixels(bones []bone, pm, skin *image.Gray, w, h int) ([]int8, [2][]float32) {
	label := make([]int8, w*h)
	armScore := [2][]float32{make([]float32, w*h), make([]float32, w*h)}
	raster.ParallelRows(h, func(y0, y1 int) {
		var best [nParts]float64
		for y := y0; y < y1; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				if pm.Pix[y*pm.Stride+x] == 0 {
					label[i] = -1
					continue
				}
				p := perception.Point{X: float64(x), Y: float64(y)}
				var byHand [nParts]bool
				lab := bestScores(bones, p, &best, &byHand)
				lowSkin := skin != nil && skin.Pix[y*skin.Stride+x] < handSkinMax
				label[i] = int8(choosePart(lab, &best, &byHand, lowSkin))
				armScore[0][i], armScore[1][i] = float32(best[partArmL]), float32(best[partArmR])
				if bones[1].score(p) < faceReach {
					armScore[0][i], armScore[1][i] = 99, 99
				}
			}
		}
	})
	return label, armScore
}

// partCoverage turns the labels into per-part coverage (the person mask's
// alpha). A limb's pixels go to its layer; where a limb lies over the body
// (or an arm over a leg), the part beneath keeps those pixels too, with
// its texture inpainted there, so that moving the limb uncovers no hole.
// limbMask marks every limb pixel, armMask the arm pixels over a leg.
func partCoverage(bones []bone, label []int8, pm *image.Gray, w, h int) (cov [][]uint8, limbMask, armMask *image.Gray) {
	cov = make([][]uint8, nParts)
	for i := range cov {
		cov[i] = make([]uint8, w*h)
	}
	limbMask = image.NewGray(image.Rect(0, 0, w, h))
	armMask = image.NewGray(image.Rect(0, 0, w, h))
	raster.ParallelRows(h, func(y0, y1 int) {
		var best [nParts]float64
		for y := y0; y < y1; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				a := pm.Pix[y*pm.Stride+x]
				if a == 0 {
					continue
				}
				lab := int(label[i])
				bestScores(bones, perception.Point{X: float64(x), Y: float64(y)}, &best, nil)
				cov[lab][i] = a
				if lab == partBody {
					continue
				}
				limbMask.Pix[y*limbMask.Stride+x] = 255
				if best[partBody] < underReach {
					cov[partBody][i] = a
				}
				if isArm(lab) {
					for _, leg := range []int{partLegL, partLegR} {
						if best[leg] < underReach {
							cov[leg][i] = a
							armMask.Pix[y*armMask.Stride+x] = 255
						}
					}
				}
			}
		}
	})
	return cov, limbMask, armMask
}

// bodyUnderLimbs lets the body reach one pixel under the limbs beside it
// (its texture is inpainted there): a limb's soft edge over the body's
// hard one would otherwise let the plate show through as a thin line.
func bodyUnderLimbs(cov [][]uint8, label []int8, w, h int) {
	bodyLab := image.NewGray(image.Rect(0, 0, w, h))
	for i, l := range label {
		if l == partBody && cov[partBody][i] > 128 {
			bodyLab.Pix[i] = 255
		}
	}
	under := scene.Dilate(bodyLab, 1.5)
	for i, l := range label {
		if l > partBody && under.Pix[i] != 0 {
			cov[partBody][i] = max(cov[partBody][i], cov[l][i])
		}
	}
}

// render draws the layers re-posed from the source skeleton to O over the
// background plate.
func (r *Reposer) render(ctx context.Context, O Skeleton) (*Rendered, error) {
	S, img, cov := r.S, r.img, r.cov
	w, h := img.Rect.Dx(), img.Rect.Dy()
	bones := buildBones(S, O, r.rel)
	if cutEdges(cov[partBody], w, h)[0] {
		slideHeadAlongTop(bones)
	}
	bodyTex, legTex := r.bodyTex, r.legTex
	spine := norm(sub(S.MidShoulder(), S.MidHip()))
	bodyZ := (O.Z[11] + O.Z[12]) / 2
	layers := []layer{{tex: bodyTex, alpha: cov[partBody], part: partBody, z: bodyZ}}
	for k := 1; k < nParts; k++ {
		l := limbOfPart(k)
		// An arm is in front of the body unless the target clearly puts it
		// behind (its middle and end joints deeper than its root). A leg is
		// always in front: the body layer keeps the top of the legs with
		// its texture inpainted there (so that a moved leg uncovers no
		// hole), and a leg drawn behind it showed that fill as a dark smear
		// across the hips (codait_man_standing "arms raised": the pose
		// model puts the standing man's knees deeper than his hips).
		rel := (O.Z[l.mid]+O.Z[l.end])/2 - O.Z[l.root]
		var z float64
		if isArm(k) && rel > 0.15*spine {
			z = bodyZ + rel
		} else {
			z = bodyZ - 1 + rel/(10*spine+1)
		}
		tex := img
		if isLeg(k) {
			tex = legTex
		}
		layers = append(layers, layer{tex: tex, alpha: cov[k], part: k, z: z})
	}
	sort.SliceStable(layers, func(a, b int) bool { return layers[a].z > layers[b].z })

	out := image.NewRGBA(img.Rect)
	copy(out.Pix, r.plate.Pix)
	alphaOut := image.NewGray(img.Rect)
	moved := make([]uint8, w*h)
	g := max(3, int(math.Round(float64(max(w, h))/160)))
	for _, L := range layers {
		if !any255(L.alpha) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		buf := image.NewRGBA(img.Rect)
		abuf := make([]uint8, w*h)
		warpLayer(L, bones, w, h, g, buf, abuf, moved)
		a := &image.Gray{Pix: abuf, Stride: w, Rect: img.Rect}
		scene.Composite(out, buf, a, image.Point{})
		for i, v := range abuf {
			if v > alphaOut.Pix[i] {
				alphaOut.Pix[i] = v
			}
		}
	}
	sealCracks(out, alphaOut)
	keepStill(out, img, moved, w, h)
	return &Rendered{Image: out, Alpha: alphaOut, Target: O, CarriedBackground: r.carried(O)}, nil
}

func any255(p []uint8) bool {
	for _, v := range p {
		if v != 0 {
			return true
		}
	}
	return false
}

// blur1 softens a coverage map with a 3x3 box (the label edges).
func blur1(a []uint8, w, h int) {
	c := make([]uint8, len(a))
	copy(c, a)
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			s := 0
			for dy := -1; dy <= 1; dy++ {
				o := (y+dy)*w + x
				s += int(c[o-1]) + int(c[o]) + int(c[o+1])
			}
			a[y*w+x] = uint8(s / 9)
		}
	}
}

// warpLayer renders one layer: a grid with step g over the source, vertex
// targets by linear blend skinning over the bones the layer may follow,
// triangles drawn by inverse affine sampling. moved (w*h) gets 255 where
// a cell that moves comes from or lands (keepStill).
func warpLayer(L layer, bones []bone, w, h, g int, buf *image.RGBA, abuf, moved []uint8) {
	gw, gh := (w+g-1)/g+1, (h+g-1)/g+1
	cov, anyCov := coveredCells(L.alpha, w, h, g)
	if !anyCov {
		return
	}
	use := layerBones(L, bones)
	need := make([]bool, gw*gh)
	for cy := 0; cy < gh-1; cy++ {
		for cx := 0; cx < gw-1; cx++ {
			if cov[cy*(gw-1)+cx] {
				need[cy*gw+cx], need[cy*gw+cx+1], need[(cy+1)*gw+cx], need[(cy+1)*gw+cx+1] = true, true, true, true
			}
		}
	}
	vx, vy := blendVertices(use, need, w, h, g)
	if !isArm(L.part) {
		// An arm cut by the frame is not held (held, a raised arm would
		// stretch from the edge to its new place): moved, it shows its
		// cut end, which pose-control's frame_cut check refuses.
		pinToEdges(vx, vy, need, cutEdges(L.alpha, w, h), w, h, g)
	}
	src := L.tex
	sp := func(vxI, vyI int) perception.Point {
		return perception.Point{X: float64(min(vxI*g, w-1)), Y: float64(min(vyI*g, h-1))}
	}
	d := func(i int) perception.Point { return perception.Point{X: vx[i], Y: vy[i]} }
	for cy := 0; cy < gh-1; cy++ {
		for cx := 0; cx < gw-1; cx++ {
			if !cov[cy*(gw-1)+cx] {
				continue
			}
			i00, i10, i01, i11 := cy*gw+cx, cy*gw+cx+1, (cy+1)*gw+cx, (cy+1)*gw+cx+1
			s00, s10, s01, s11 := sp(cx, cy), sp(cx+1, cy), sp(cx, cy+1), sp(cx+1, cy+1)
			var mark []uint8
			if cellMoved([4]perception.Point{s00, s10, s01, s11}, [4]perception.Point{d(i00), d(i10), d(i01), d(i11)}) {
				mark = moved
				markRect(moved, w, h, image.Rect(int(s00.X), int(s00.Y), int(s11.X)+1, int(s11.Y)+1))
			}
			drawTri(src, L.alpha, w, h, buf, abuf, mark, [3]perception.Point{s00, s10, s11}, [3]perception.Point{d(i00), d(i10), d(i11)})
			drawTri(src, L.alpha, w, h, buf, abuf, mark, [3]perception.Point{s00, s11, s01}, [3]perception.Point{d(i00), d(i11), d(i01)})
		}
	}
}

// Layer warp tuning.
const (
	// blendKappa: the bones' maps are blended with weights
	// exp(-blendKappa * (score - best score)), so that the nearest bone
	// dominates away from the joints.
	blendKappa = 9.0
	// minBlendWeight: lighter weights are left out.
	minBlendWeight = 1e-3
	// rootPenalty: the torso pulls on a limb only around its root joint,
	// with this score penalty.
	rootPenalty = 0.5
)

// coveredCells marks the g x g grid cells of a w x h layer with any
// coverage in alpha, and says whether there is any.
func coveredCells(alpha []uint8, w, h, g int) ([]bool, bool) {
	gw, gh := (w+g-1)/g+1, (h+g-1)/g+1
	cov := make([]bool, (gw-1)*(gh-1))
	anyCov := false
	for y := 0; y < h; y++ {
		cy := y / g
		row := alpha[y*w : (y+1)*w]
		for x, v := range row {
			if v != 0 {
				cov[cy*(gw-1)+x/g] = true
				anyCov = true
			}
		}
	}
	return cov, anyCov
}

// weightedBone is a bone a layer follows, with a score penalty, and
// optionally an anchor point (with radius ar) whose distance scores
// instead of the bone's capsule.
type weightedBone struct {
	b       *bone
	penalty float64
	anchor  *perception.Point
	ar      float64
}

// layerBones are the bones a layer follows: its own; a limb also the
// torso, near its root joint only (penalised, so it only matters at the
// joint).
func layerBones(L layer, bones []bone) []weightedBone {
	var use []weightedBone
	var root perception.Point
	rootR := 1.0
	for k := range bones {
		b := &bones[k]
		if b.part == L.part && L.part != partBody && rootR == 1 {
			// The limb's first bone starts at its root joint.
			root, rootR = b.a, b.r
		}
	}
	for k := range bones {
		b := &bones[k]
		switch {
		case b.part == L.part:
			use = append(use, weightedBone{b: b})
		case L.part != partBody && b.poly != nil:
			use = append(use, weightedBone{b: b, penalty: rootPenalty, anchor: &root, ar: rootR})
		}
	}
	return use
}

// blendVertices maps the grid vertices that need it through the blend of
// the bones' maps, weighted by their scores there.
func blendVertices(use []weightedBone, need []bool, w, h, g int) (vx, vy []float64) {
	gw, gh := (w+g-1)/g+1, (h+g-1)/g+1
	vx = make([]float64, gw*gh)
	vy = make([]float64, gw*gh)
	raster.ParallelRows(gh, func(r0, r1 int) {
		sc := make([]float64, len(use))
		for vyI := r0; vyI < r1; vyI++ {
			for vxI := 0; vxI < gw; vxI++ {
				i := vyI*gw + vxI
				if !need[i] {
					continue
				}
				p := perception.Point{X: float64(min(vxI*g, w-1)), Y: float64(min(vyI*g, h-1))}
				smin := math.Inf(1)
				for k, u := range use {
					if u.anchor != nil {
						sc[k] = norm(sub(p, *u.anchor))/u.ar + u.penalty
					} else {
						sc[k] = u.b.score(p) + u.penalty
					}
					smin = math.Min(smin, sc[k])
				}
				var acc perception.Point
				var ws float64
				for k, u := range use {
					wt := math.Exp(-blendKappa * (sc[k] - smin))
					if wt < minBlendWeight {
						continue
					}
					acc = add(acc, scale(u.b.mapPoint(p), wt))
					ws += wt
				}
				acc = scale(acc, 1/ws)
				vx[i], vy[i] = acc.X, acc.Y
			}
		}
	})
	return vx, vy
}

func cross(a, b, c perception.Point) float64 {
	return (b.X-a.X)*(c.Y-a.Y) - (b.Y-a.Y)*(c.X-a.X)
}

// drawTri fills the destination triangle dst with samples from the source
// triangle s (texture and coverage). A pixel takes the sample when its
// coverage is higher than what is already there. Folded or torn triangles
// (flipped, or stretched more than 8x) are skipped. mark (optional, w*h)
// gets 255 wherever the triangle lands with any coverage.
func drawTri(tex *image.RGBA, alpha []uint8, w, h int, buf *image.RGBA, abuf, mark []uint8, s, d [3]perception.Point) {
	as := cross(s[0], s[1], s[2])
	ad := cross(d[0], d[1], d[2])
	if math.Abs(as) < 1e-9 || ad*as <= 0 || math.Abs(ad) > 8*math.Abs(as) || math.IsNaN(ad) {
		return
	}
	// Slivers: an edge stretched far more than the triangle's size.
	ls := math.Max(norm(sub(s[0], s[1])), math.Max(norm(sub(s[1], s[2])), norm(sub(s[2], s[0]))))
	ld := math.Max(norm(sub(d[0], d[1])), math.Max(norm(sub(d[1], d[2])), norm(sub(d[2], d[0]))))
	if ld > 4*ls {
		return
	}
	minX := int(math.Floor(math.Min(d[0].X, math.Min(d[1].X, d[2].X))))
	maxX := int(math.Ceil(math.Max(d[0].X, math.Max(d[1].X, d[2].X))))
	minY := int(math.Floor(math.Min(d[0].Y, math.Min(d[1].Y, d[2].Y))))
	maxY := int(math.Ceil(math.Max(d[0].Y, math.Max(d[1].Y, d[2].Y))))
	minX, minY = max(minX, 0), max(minY, 0)
	maxX, maxY = min(maxX, w-1), min(maxY, h-1)
	inv := 1 / ad
	const eps = -1e-4
	for y := minY; y <= maxY; y++ {
		for x := minX; x <= maxX; x++ {
			p := perception.Point{X: float64(x), Y: float64(y)}
			l0 := cross(d[1], d[2], p) * inv
			l1 := cross(d[2], d[0], p) * inv
			l2 := 1 - l0 - l1
			if l0 < eps || l1 < eps || l2 < eps {
				continue
			}
			sx := l0*s[0].X + l1*s[1].X + l2*s[2].X
			sy := l0*s[0].Y + l1*s[1].Y + l2*s[2].Y
			a := sampleA(alpha, w, h, sx, sy)
			i := y*w + x
			if mark != nil && a > 0 {
				mark[i] = 255
			}
			if a <= abuf[i] {
				continue
			}
			r, g, b, _ := raster.SampleBilinear(tex.Pix, w, h, float32(sx), float32(sy))
			abuf[i] = a
			o := y*buf.Stride + x*4
			buf.Pix[o] = uint8(r + 0.5)
			buf.Pix[o+1] = uint8(g + 0.5)
			buf.Pix[o+2] = uint8(b + 0.5)
			buf.Pix[o+3] = 255
		}
	}
}

// stillEps is the largest move, in pixels, of a grid vertex that counts
// as staying in place (the blend of a moved bone's map with a far
// unmoved one's leaves such hundredths of a pixel).
const stillEps = 0.1

// cellMoved says whether any of a grid cell's vertices moves from s to d
// by more than stillEps.
func cellMoved(s, d [4]perception.Point) bool {
	for k := range s {
		if norm(sub(d[k], s[k])) > stillEps {
			return true
		}
	}
	return false
}

// markRect sets m (w*h) to 255 over r, clipped to the image.
func markRect(m []uint8, w, h int, r image.Rectangle) {
	r = r.Intersect(image.Rect(0, 0, w, h))
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			m[y*w+x] = 255
		}
	}
}

// stillFeather is the distance, in pixels, from the moved pixels over
// which the photo is eased back in.
const stillFeather = 2

// keepStill puts the photo (img) back wherever nothing moved: away from
// every pixel a moving cell comes from or lands on (moved), the layers
// land where they were, and re-compositing them showed the arms' soft
// edges over the body's texture inpainted under them as faint seams
// (codait_man_standing's shirt, "looking at camera"). The photo is eased
// in over stillFeather pixels from the moved ones.
func keepStill(out, img *image.RGBA, moved []uint8, w, h int) {
	mv := scene.Dilate(&image.Gray{Pix: moved, Stride: w, Rect: image.Rect(0, 0, w, h)}, stillFeather)
	a := make([]uint8, w*h)
	for i, v := range mv.Pix {
		if v == 0 {
			a[i] = 255
		}
	}
	blur1(a, w, h)
	blur1(a, w, h)
	for i, v := range a {
		if v == 0 {
			continue
		}
		o := i * 4
		for c := range 3 {
			out.Pix[o+c] = uint8((int(out.Pix[o+c])*(255-int(v)) + int(img.Pix[o+c])*int(v) + 127) / 255)
		}
	}
}

func sampleA(a []uint8, w, h int, fx, fy float64) uint8 {
	fx = math.Max(0, math.Min(fx, float64(w-1)))
	fy = math.Max(0, math.Min(fy, float64(h-1)))
	x0, y0 := int(fx), int(fy)
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	ax, ay := fx-float64(x0), fy-float64(y0)
	v := float64(a[y0*w+x0])*(1-ax)*(1-ay) + float64(a[y0*w+x1])*ax*(1-ay) +
		float64(a[y1*w+x0])*(1-ax)*ay + float64(a[y1*w+x1])*ax*ay
	return uint8(v + 0.5)
}

// plateMatch is the largest difference (any RGB channel, 0..255) between
// a person pixel and the background plate's fill at the same place for
// which the pixel is taken to be background that the person mask took
// in. The plate is filled from the background around the person, so
// background taken into the mask matches it and the person's own pixels
// (skin, sleeves) do not: on codait_man_standing the pixels within 20 of
// the plate are the beige wall around the hands, which the parsing
// reads as skin, and none of the arms' own.
const plateMatch = 20

// plateLike is each arm layer's (left, right) share of pixels within
// plateMatch of the plate.
func plateLike(label []int8, img, plate *image.RGBA, w int) [2]float64 {
	var n, bg [2]float64
	for i, l := range label {
		if !isArm(int(l)) {
			continue
		}
		k := 0
		if l == partArmR {
			k = 1
		}
		n[k]++
		x, y := i%w, i/w
		d := 0
		for c := range 3 {
			v := int(img.Pix[y*img.Stride+x*4+c]) - int(plate.Pix[y*plate.Stride+x*4+c])
			d = max(d, v, -v)
		}
		if d <= plateMatch {
			bg[k]++
		}
	}
	var out [2]float64
	for k := range out {
		if n[k] > 0 {
			out[k] = bg[k] / n[k]
		}
	}
	return out
}

// NameCarriedBackground is the check of Rendered.CarriedBackground.
const NameCarriedBackground = "carried_background"

// MaxCarriedBackground is the largest share of a moved arm layer's pixels
// that may match the plate. Measured on pose-control's photos (custom
// poses arms raised, hands on hips, walking): codait_man_standing, whose
// person mask takes in the wall around the hands, 0.39 (carried as a flat
// skin-coloured patch onto the jeans with hands on hips, as beige halos
// round the raised hands); the outputs that look clean 0-0.13
// (astronaut 0.13, pexels_two_women_phones 0.11, fashn_model 0.10,
// pixabay_two_women_bikes 0.04).
const MaxCarriedBackground = 0.25

// CarriedBackgroundCheck is the NameCarriedBackground check of r.
func CarriedBackgroundCheck(r *Rendered) pipelines.Check {
	return pipelines.MaxCheck(NameCarriedBackground, math.Round(r.CarriedBackground*1e4)/1e4, MaxCarriedBackground)
}

// armMovedFrac is how far, as a fraction of the upper arm's length, the
// target must move an elbow or wrist for that arm's carried background
// to count.
const armMovedFrac = 0.1

// carried is the largest armBg over the arms that O moves.
func (r *Reposer) carried(O Skeleton) float64 {
	worst := 0.0
	for k, j := range [2][3]int{{11, 13, 15}, {12, 14, 16}} {
		upper := norm(sub(r.S.Joints[j[1]], r.S.Joints[j[0]]))
		if norm(sub(O.Joints[j[1]], r.S.Joints[j[1]])) > armMovedFrac*upper || norm(sub(O.Joints[j[2]], r.S.Joints[j[2]])) > armMovedFrac*upper {
			worst = max(worst, r.armBg[k])
		}
	}
	return worst
}

// growSkin flood-fills each arm's label through body-labelled skin pixels
// (skin > 50%) from its own skin pixels, within 2.5 capsule radii of the arm.
func growSkin(label []int8, armScore [2][]float32, skin, pm *image.Gray, w, h int) {
	isSkin := func(i int) bool {
		return skin.Pix[(i/w)*skin.Stride+i%w] > 128 && pm.Pix[(i/w)*pm.Stride+i%w] > 64
	}
	for k, arm := range []int8{partArmL, partArmR} {
		var q []int
		for i, l := range label {
			if l == arm && isSkin(i) {
				q = append(q, i)
			}
		}
		for len(q) > 0 {
			i := q[len(q)-1]
			q = q[:len(q)-1]
			x, y := i%w, i/w
			for _, d := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
				nx, ny := x+d[0], y+d[1]
				if nx < 0 || ny < 0 || nx >= w || ny >= h {
					continue
				}
				j := ny*w + nx
				// Grow over the body only (skin-coloured clothes on the legs,
				// khaki trousers say, would otherwise join the hand).
				if label[j] != partBody || armScore[k][j] >= 2.5 || !isSkin(j) {
					continue
				}
				label[j] = arm
				q = append(q, j)
			}
		}
	}
}

// inpaintHalf fills mask's pixels of img (Telea) at half resolution for
// images over 600 px, upsampled into the mask only: the fill is smooth
// texture under a limb, where full resolution buys nothing.
func inpaintHalf(img *image.RGBA, mask *image.Gray) (*image.RGBA, error) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if max(w, h) <= 600 {
		return cv.Inpaint(img, mask, 5)
	}
	sw, sh := (w+1)/2, (h+1)/2
	small := raster.ResizeFast(img, sw, sh)
	sm := raster.ResizeGray(mask, sw, sh)
	for i, v := range sm.Pix {
		if v > 0 {
			sm.Pix[i] = 255
		}
	}
	f, err := cv.Inpaint(small, scene.Dilate(sm, 1), 4)
	if err != nil {
		return nil, err
	}
	up := raster.Resize(f, w, h)
	out := image.NewRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if mask.Pix[y*mask.Stride+x] != 0 {
				o := y*out.Stride + x*4
				copy(out.Pix[o:o+3], up.Pix[y*up.Stride+x*4:])
			}
		}
	}
	return out, nil
}
