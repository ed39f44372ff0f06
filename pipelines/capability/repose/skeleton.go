package repose

import (
	"math"

	"fashiond/perception"
)

// Skeleton is a 2D body pose in image pixels: the 33 BlazePose joints with
// their relative depth (BlazePose z: smaller is nearer the camera, in about
// the same scale as x) and whether each joint is known. Unknown joints of a
// target take the source's angles when retargeted.
type Skeleton struct {
	Joints [33]perception.Point
	Z      [33]float64
	Known  [33]bool
}

// minVisibility is the visibility below which a template joint is unknown.
const minVisibility = 0.5

// SkeletonFromPose converts a pose model result. A joint is known when its
// visibility is at least 0.5 and it lies inside the w x h image (with a 2%
// margin); w or h <= 0 skips the bounds test.
func SkeletonFromPose(p *perception.Pose, w, h int) Skeleton {
	var s Skeleton
	if p == nil {
		return s
	}
	mx, my := 0.02*float64(w), 0.02*float64(h)
	for i, k := range p.Keypoints {
		s.Joints[i] = perception.Point{X: k.X, Y: k.Y}
		s.Z[i] = k.Z
		ok := k.Visibility >= minVisibility && !math.IsNaN(k.X) && !math.IsNaN(k.Y)
		if ok && w > 0 && h > 0 {
			ok = k.X >= -mx && k.Y >= -my && k.X <= float64(w)+mx && k.Y <= float64(h)+my
		}
		s.Known[i] = ok
	}
	return s
}

// AllKnown returns s with every joint marked known (a source skeleton: the
// pose model predicts joints outside the frame too, and the warp needs them).
func AllKnown(s Skeleton) Skeleton {
	for i := range s.Known {
		s.Known[i] = true
	}
	return s
}

func add(a, b perception.Point) perception.Point { return perception.Point{X: a.X + b.X, Y: a.Y + b.Y} }
func sub(a, b perception.Point) perception.Point { return perception.Point{X: a.X - b.X, Y: a.Y - b.Y} }
func scale(a perception.Point, k float64) perception.Point {
	return perception.Point{X: a.X * k, Y: a.Y * k}
}
func mid(a, b perception.Point) perception.Point { return scale(add(a, b), 0.5) }
func norm(a perception.Point) float64            { return math.Hypot(a.X, a.Y) }
func dot(a, b perception.Point) float64          { return a.X*b.X + a.Y*b.Y }
func angle(a perception.Point) float64           { return math.Atan2(a.Y, a.X) }
func unit(a perception.Point) perception.Point {
	n := norm(a)
	if n < 1e-9 {
		return perception.Point{}
	}
	return scale(a, 1/n)
}
func rot(a perception.Point, t float64) perception.Point {
	c, s := math.Cos(t), math.Sin(t)
	return perception.Point{X: c*a.X - s*a.Y, Y: s*a.X + c*a.Y}
}
func wrapAngle(t float64) float64 {
	for t > math.Pi {
		t -= 2 * math.Pi
	}
	for t <= -math.Pi {
		t += 2 * math.Pi
	}
	return t
}

// MidHip and MidShoulder are the skeleton's root and neck base.
func (s Skeleton) MidHip() perception.Point {
	return mid(s.Joints[perception.KpLeftHip], s.Joints[perception.KpRightHip])
}

// MidShoulder is the midpoint of the shoulders.
func (s Skeleton) MidShoulder() perception.Point {
	return mid(s.Joints[perception.KpLeftShoulder], s.Joints[perception.KpRightShoulder])
}

// TorsoSize is the distance from the mid-hip to the mid-shoulder, the unit
// of PCK (fallback: shoulder width).
func (s Skeleton) TorsoSize() float64 {
	t := norm(sub(s.MidShoulder(), s.MidHip()))
	if t < 1 {
		t = norm(sub(s.Joints[perception.KpLeftShoulder], s.Joints[perception.KpRightShoulder]))
	}
	return t
}

// Facing is +1 when the person's left shoulder is on the image right (the
// person faces the camera), -1 when seen from behind or mirrored.
func (s Skeleton) Facing() float64 {
	if s.Joints[perception.KpLeftShoulder].X >= s.Joints[perception.KpRightShoulder].X {
		return 1
	}
	return -1
}

// mirrorLR swaps every left/right joint pair.
func mirrorLR(s Skeleton) Skeleton {
	pairs := [][2]int{{1, 4}, {2, 5}, {3, 6}, {7, 8}, {9, 10}, {11, 12}, {13, 14}, {15, 16}, {17, 18}, {19, 20}, {21, 22},
		{23, 24}, {25, 26}, {27, 28}, {29, 30}, {31, 32}}
	out := s
	for _, p := range pairs {
		a, b := p[0], p[1]
		out.Joints[a], out.Joints[b] = s.Joints[b], s.Joints[a]
		out.Z[a], out.Z[b] = s.Z[b], s.Z[a]
		out.Known[a], out.Known[b] = s.Known[b], s.Known[a]
	}
	return out
}

// face joints (nose, eyes, ears, mouth) move rigidly with the head.
var faceJoints = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// chain is one bone of the forward-kinematics tree: child is placed from
// parent using the target's direction when both are known in the target,
// else the parent's rotation is inherited.
type chain struct{ parent, child int }

var (
	leftArm  = []chain{{11, 13}, {13, 15}}
	rightArm = []chain{{12, 14}, {14, 16}}
	leftLeg  = []chain{{23, 25}, {25, 27}}
	rightLeg = []chain{{24, 26}, {26, 28}}
	// extremities ride with their end joint's bone.
	leftHand  = []int{17, 19, 21}
	rightHand = []int{18, 20, 22}
	leftFoot  = []int{29, 31}
	rightFoot = []int{30, 32}
)

// Retarget places the target's joint angles on the source's bone lengths,
// anchored at the source's mid-hip: every bone keeps its source length and
// takes the target's image-plane direction; bones whose joints the target
// does not know inherit their parent's rotation. When the target faces the
// other way (its left shoulder on the other side), its left and right are
// swapped first so the picture's layout is what is copied. Z comes from the
// target where known.
func Retarget(target, source Skeleton) Skeleton {
	if target.Facing() != source.Facing() && target.Known[11] && target.Known[12] {
		target = mirrorLR(target)
	}
	S, T := source, target
	var out Skeleton
	out.Z = S.Z
	for i := range out.Known {
		out.Known[i] = true
		if T.Known[i] {
			out.Z[i] = T.Z[i]
		}
	}
	known := func(i ...int) bool {
		for _, j := range i {
			if !T.Known[j] {
				return false
			}
		}
		return true
	}
	delta := func(sa, sb, ta, tb perception.Point) float64 {
		return wrapAngle(angle(sub(tb, ta)) - angle(sub(sb, sa)))
	}
	sHip, sSh := S.MidHip(), S.MidShoulder()
	tHip, tSh := T.MidHip(), T.MidShoulder()
	oHip := sHip
	dSpine := 0.0
	if known(11, 12, 23, 24) {
		dSpine = delta(sHip, sSh, tHip, tSh)
	}
	oSh := add(oHip, rot(sub(sSh, sHip), dSpine))
	// Hips hang from the mid-hip, shoulders from the mid-shoulder.
	for _, j := range []int{23, 24} {
		d := dSpine
		if known(23, 24) {
			d = delta(sHip, S.Joints[j], tHip, T.Joints[j])
		}
		out.Joints[j] = add(oHip, rot(sub(S.Joints[j], sHip), d))
	}
	for _, j := range []int{11, 12} {
		d := dSpine
		if known(11, 12) {
			d = delta(sSh, S.Joints[j], tSh, T.Joints[j])
		}
		out.Joints[j] = add(oSh, rot(sub(S.Joints[j], sSh), d))
	}
	// Head: rigid about the neck base, turned like the target's neck-to-nose.
	dHead := dSpine
	if known(11, 12, 0) {
		dHead = delta(sSh, S.Joints[0], tSh, T.Joints[0])
	}
	for _, j := range faceJoints {
		out.Joints[j] = add(oSh, rot(sub(S.Joints[j], sSh), dHead))
	}
	limb := func(c []chain, ends []int) {
		d := dSpine
		for _, b := range c {
			if known(b.parent, b.child) {
				d = delta(S.Joints[b.parent], S.Joints[b.child], T.Joints[b.parent], T.Joints[b.child])
			}
			out.Joints[b.child] = add(out.Joints[b.parent], rot(sub(S.Joints[b.child], S.Joints[b.parent]), d))
		}
		end := c[len(c)-1].child
		// Hands and feet: one rigid rotation, from the target's mean
		// extremity direction when known.
		var sd, td perception.Point
		nk := 0
		for _, j := range ends {
			sd = add(sd, sub(S.Joints[j], S.Joints[end]))
			if known(end, j) {
				td = add(td, sub(T.Joints[j], T.Joints[end]))
				nk++
			}
		}
		if nk == len(ends) && norm(td) > 1e-6 && norm(sd) > 1e-6 {
			d = wrapAngle(angle(td) - angle(sd))
		}
		for _, j := range ends {
			out.Joints[j] = add(out.Joints[end], rot(sub(S.Joints[j], S.Joints[end]), d))
		}
	}
	limb(leftArm, leftHand)
	limb(rightArm, rightHand)
	limb(leftLeg, leftFoot)
	limb(rightLeg, rightFoot)
	return out
}

// PCK returns the fraction of the given joints of got that lie within
// frac*torso size of want (torso size of want), over joints known in both.
// It returns the number of joints compared too.
func PCK(got, want Skeleton, joints []int, frac float64) (float64, int) {
	th := frac * want.TorsoSize()
	var hit, n int
	for _, j := range joints {
		if !got.Known[j] || !want.Known[j] {
			continue
		}
		n++
		if norm(sub(got.Joints[j], want.Joints[j])) <= th {
			hit++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(hit) / float64(n), n
}

// BodyJoints are the 12 limb and torso joints PCK is usually measured on.
var BodyJoints = []int{11, 12, 13, 14, 15, 16, 23, 24, 25, 26, 27, 28}
