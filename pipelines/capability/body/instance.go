package body

import (
	"context"
	"fmt"
	"image"
	"math"
	"slices"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
)

// Instance split of a person-mask component shared by several faces
// (overlapping people, a person standing behind the subject, a seated
// neighbour against the subject's legs). The selfie segmentation model
// gives one mask for everyone; a horizontal split about the faces' centres
// cut a neighbour's chest down a vertical seam and gave half of him to the
// subject. Here each face's own body is found by the pose model run on a
// crop around that face: its person mask (the pose model segments the one
// person it tracks) is that face's claim, kept only when the pose's head
// keypoints lie on that face (else the pose tracked someone else). A pixel
// of a shared component goes to the face whose claim covers it (the
// strongest when several do); a pixel no claim covers goes to the face
// whose claimed pixels are nearest, and only when no face has a claim to
// the horizontal rule (splitCost).

// Tuning constants of the instance split.
const (
	// claimSideFaces, claimUpFaces and claimDownFaces size the crop the
	// pose model runs on around a face: face widths to each side, face
	// heights above the face's top and below its bottom.
	claimSideFaces = 3.0
	claimUpFaces   = 0.8
	claimDownFaces = 8.0
	// claimHeadTolFaces: the pose's nose must lie within the face box grown
	// by this many face widths for the pose to be the face's own.
	claimHeadTolFaces = 0.35
	// claimEyeTolFaces: each of the pose's eyes must lie within this many
	// face widths of one of the detector's eye landmarks.
	claimEyeTolFaces = 0.3
	// minClaimPresence is the pose presence from which a claim counts.
	minClaimPresence = 0.5
	// spillSamples points are sampled along each bone; a claim that covers
	// spillFrac of another face's bone points spills onto it, and
	// spillPenalty weighs its bone distances where both claim a pixel.
	spillSamples = 10
	spillFrac    = 0.5
	spillPenalty = 3.0
	// minClaimantFrac and claimantFaces: a face whose claim covers this
	// share of a component, or this many of its face areas, competes for
	// the component's pixels.
	minClaimantFrac = 0.02
	claimantFaces   = 0.5
	// minClaimFrac is the smallest claim, in face areas, that counts (a
	// pose mask of a few pixels is no body).
	minClaimFrac = 1.0
)

// claim is one face's own body as the pose model saw it: its person mask
// (image-sized, 0..255) and its bones (segments between visible joints,
// image coordinates) that settle pixels several masks cover.
type claim struct {
	mask  *image.Gray
	bones [][4]float64
}

// claimBones are the joint pairs whose segments make a claim's skeleton.
var claimBones = [][2]int{
	{perception.KpNose, perception.KpLeftShoulder}, {perception.KpNose, perception.KpRightShoulder},
	{perception.KpLeftShoulder, perception.KpRightShoulder}, {perception.KpLeftHip, perception.KpRightHip},
	{perception.KpLeftShoulder, perception.KpLeftHip}, {perception.KpRightShoulder, perception.KpRightHip},
	{perception.KpLeftShoulder, perception.KpLeftElbow}, {perception.KpLeftElbow, perception.KpLeftWrist},
	{perception.KpRightShoulder, perception.KpRightElbow}, {perception.KpRightElbow, perception.KpRightWrist},
	{perception.KpLeftHip, perception.KpLeftKnee}, {perception.KpLeftKnee, perception.KpLeftAnkle},
	{perception.KpRightHip, perception.KpRightKnee}, {perception.KpRightKnee, perception.KpRightAnkle},
}

// minBoneVisibility is the joint visibility from which a bone counts.
const minBoneVisibility = 0.5

// boneDist is the distance from (x, y) to the nearest of c's bones.
func (c *claim) boneDist(x, y float64) float64 {
	best := math.Inf(1)
	for _, b := range c.bones {
		best = math.Min(best, segDist(x, y, b))
	}
	return best
}

func segDist(x, y float64, b [4]float64) float64 {
	dx, dy := b[2]-b[0], b[3]-b[1]
	t := 0.0
	if l := dx*dx + dy*dy; l > 0 {
		t = math.Max(0, math.Min(1, ((x-b[0])*dx+(y-b[1])*dy)/l))
	}
	return math.Hypot(x-b[0]-t*dx, y-b[1]-t*dy)
}

// claimants adds to owners (the faces whose heads lie on component l)
// every other face whose claim covers at least minClaimantFrac of the
// component or claimantFaces of its own face areas of it: a neighbour's
// arm, helmet or shoulder that the person mask joined to the subject's
// component is split off for the neighbour, not given to the subject.
func claimants(owners []int, lab []int32, l int32, size int, faces []perception.Face, claims []*claim) []int {
	if claims == nil || len(owners) == 0 {
		return owners
	}
	out := owners
	for j, c := range claims {
		if c == nil || slices.Contains(owners, j) {
			continue
		}
		n := 0
		for k, v := range lab {
			if v == l && c.mask.Pix[k] >= MaskThreshold {
				n++
			}
		}
		if float64(n) >= minClaimantFrac*float64(size) || float64(n) >= claimantFaces*faceArea(faces[j]) {
			out = append(slices.Clone(out), j)
		}
	}
	return out
}

// claimCrop is the crop the pose model runs on for face f.
func claimCrop(f perception.Face, w, h int) image.Rectangle {
	cx, _ := faceCentre(f)
	fw, fh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	r := image.Rect(int(cx-claimSideFaces*fw), int(f.Box[1]-claimUpFaces*fh), int(math.Ceil(cx+claimSideFaces*fw)), int(math.Ceil(f.Box[3]+claimDownFaces*fh)))
	return r.Intersect(image.Rect(0, 0, w, h))
}

// claims runs the pose model around each face in idx and returns each
// face's claim, nil where the pose is not that face's own (head elsewhere,
// low presence, too small).
func claims(ctx context.Context, p perception.Perception, img *image.RGBA, faces []perception.Face, idx []int) ([]*claim, error) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	claims := make([]*claim, len(faces))
	for _, i := range idx {
		r := claimCrop(faces[i], w, h)
		if r.Dx() < 8 || r.Dy() < 8 {
			continue
		}
		pose, err := p.Pose(ctx, Crop(img, r))
		if err != nil {
			return nil, fmt.Errorf("body: pose of face %d: %w", i, err)
		}
		claims[i] = claimOf(faces[i], pose, r, w, h)
	}
	return claims, nil
}

// claimOf places pose's mask and bones (crop r) into an image-sized claim
// when the pose is face f's own; nil otherwise.
func claimOf(f perception.Face, pose *perception.Pose, r image.Rectangle, w, h int) *claim {
	if pose == nil || pose.Mask == nil || pose.Presence < minClaimPresence {
		return nil
	}
	nose := pose.Keypoints[perception.KpNose]
	fw := f.Box[2] - f.Box[0]
	tol := claimHeadTolFaces * fw
	nx, ny := nose.X+float64(r.Min.X), nose.Y+float64(r.Min.Y)
	if nx < f.Box[0]-tol || nx > f.Box[2]+tol || ny < f.Box[1]-tol || ny > f.Box[3]+tol {
		return nil
	}
	if !f.LandmarksEstimated && !eyesAgree(f, pose, r, fw) {
		return nil
	}
	g := image.NewGray(image.Rect(0, 0, w, h))
	n := 0
	for y := 0; y < r.Dy() && y < pose.Mask.Rect.Dy(); y++ {
		for x := 0; x < r.Dx() && x < pose.Mask.Rect.Dx(); x++ {
			v := pose.Mask.Pix[y*pose.Mask.Stride+x]
			g.Pix[(y+r.Min.Y)*w+x+r.Min.X] = v
			if v >= MaskThreshold {
				n++
			}
		}
	}
	if float64(n) < minClaimFrac*faceArea(f) {
		return nil
	}
	c := &claim{mask: g}
	ox, oy := float64(r.Min.X), float64(r.Min.Y)
	for _, b := range claimBones {
		k0, k1 := pose.Keypoints[b[0]], pose.Keypoints[b[1]]
		if k0.Visibility >= minBoneVisibility && k1.Visibility >= minBoneVisibility {
			c.bones = append(c.bones, [4]float64{k0.X + ox, k0.Y + oy, k1.X + ox, k1.Y + oy})
		}
	}
	return c
}

// eyesAgree reports whether the pose's eyes lie on the face detector's
// eye landmarks (either order: the detector's "right eye" is the image's
// left), each within claimEyeTolFaces face widths: the pose is a person
// whose face is f, not a person beside a dog's head the detector took for
// a face.
func eyesAgree(f perception.Face, pose *perception.Pose, r image.Rectangle, fw float64) bool {
	ox, oy := float64(r.Min.X), float64(r.Min.Y)
	l, rt := pose.Keypoints[perception.KpLeftEye], pose.Keypoints[perception.KpRightEye]
	near := func(k perception.Keypoint, p perception.Point) bool {
		return math.Hypot(k.X+ox-p.X, k.Y+oy-p.Y) <= claimEyeTolFaces*fw
	}
	a, b := f.Landmarks[0], f.Landmarks[1]
	return near(l, a) && near(rt, b) || near(l, b) && near(rt, a)
}

// splitClaimed gives each pixel of component l to one of the faces fs by
// their claims (package comment above); faces without a claim compete by
// splitCost only where no claim covers the pixel and no face has one.
func splitClaimed(lab []int32, l int32, w, h int, faces []perception.Face, fs []int, claims []*claim, regions []*image.Gray) {
	var withClaim []int
	for _, i := range fs {
		if regions[i] == nil {
			regions[i] = image.NewGray(image.Rect(0, 0, w, h))
		}
		if claims != nil && claims[i] != nil {
			withClaim = append(withClaim, i)
		}
	}
	if len(withClaim) == 0 {
		splitComponent(lab, l, w, h, faces, fs, regions)
		return
	}
	spill := spills(claims, withClaim)
	dist := make(map[int][]float64, len(withClaim))
	for _, i := range withClaim {
		c := claims[i].mask
		dist[i] = mask.SqDist(w, h, func(k int) bool { return lab[k] == l && c.Pix[k] >= MaskThreshold })
	}
	for k, v := range lab {
		if v != l {
			continue
		}
		best := coveredBy(claims, withClaim, spill, k, w)
		if best < 0 {
			bd := math.Inf(1)
			for _, i := range withClaim {
				// the distance in face widths, so that a near small face
				// does not lose to a far large one.
				fw := faces[i].Box[2] - faces[i].Box[0]
				if d := math.Sqrt(dist[i][k]) / fw; d < bd {
					best, bd = i, d
				}
			}
			if len(withClaim) < len(fs) {
				x, y := float64(k%w), float64(k/w)
				for _, i := range fs {
					if claims[i] == nil && splitCost(faces[i], x, y) < bd {
						best, bd = i, splitCost(faces[i], x, y)
					}
				}
			}
		}
		regions[best].Pix[k] = 255
	}
}

// spills[{i, j}] says that face i's claim spills onto face j: it covers
// most of j's bones (the pose model run around i segmented j too, as it
// does for a person pressed against or sitting in front of its own).
func spills(claims []*claim, withClaim []int) map[[2]int]bool {
	out := map[[2]int]bool{}
	for _, i := range withClaim {
		for _, j := range withClaim {
			if i != j && coversBones(claims[i].mask, claims[j].bones) {
				out[[2]int{i, j}] = true
			}
		}
	}
	return out
}

// coversBones reports whether m covers at least spillFrac of the points
// sampled along bones.
func coversBones(m *image.Gray, bones [][4]float64) bool {
	n, on := 0, 0
	for _, b := range bones {
		for s := 0; s <= spillSamples; s++ {
			t := float64(s) / spillSamples
			p := image.Pt(int(b[0]+t*(b[2]-b[0])), int(b[1]+t*(b[3]-b[1])))
			if !p.In(m.Rect) {
				continue
			}
			n++
			if m.Pix[p.Y*m.Stride+p.X] >= MaskThreshold {
				on++
			}
		}
	}
	return n > 0 && float64(on) >= spillFrac*float64(n)
}

// coveredBy is the face (among withClaim) whose claim covers pixel k; when
// several do, the one whose bones are nearest (in pixels: a small face is
// a person farther away, not a thinner one), a claim
// that spills onto another claimant counting its distance spillPenalty
// times; -1 for none.
func coveredBy(claims []*claim, withClaim []int, spill map[[2]int]bool, k, w int) int {
	var on []int
	for _, i := range withClaim {
		if claims[i].mask.Pix[k] >= MaskThreshold {
			on = append(on, i)
		}
	}
	best, bd := -1, math.Inf(1)
	x, y := float64(k%w), float64(k/w)
	for _, i := range on {
		d := claims[i].boneDist(x, y)
		for _, j := range on {
			if spill[[2]int{i, j}] && !spill[[2]int{j, i}] {
				d *= spillPenalty
				break
			}
		}
		if best < 0 || d < bd {
			best, bd = i, d
		}
	}
	return best
}
