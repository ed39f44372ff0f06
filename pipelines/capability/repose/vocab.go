package repose

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"fashiond/perception"
	"fashiond/spec"
)

// The custom-pose vocabulary. Every entry moves one or more joint groups of
// the source skeleton; entries that move different groups combine ("walking,
// looking left"). Left and right are the model's own left and right.

type group int

const (
	gLeftArm group = iota
	gRightArm
	gLeftLeg
	gRightLeg
	gTorso
	gHead
	nGroups
)

var groupNames = [nGroups]string{"left arm", "right arm", "left leg", "right leg", "torso", "head"}

const (
	sideLeft  = 1
	sideRight = -1
)

// frame is the source body's frame: up runs from the mid-hip to the
// mid-shoulder, left points to the person's left shoulder side.
type frame struct {
	src           Skeleton
	up, left      perception.Point
	spine, sw, hw float64
}

func newFrame(s Skeleton) (frame, error) {
	f := frame{src: s}
	hip, sh := s.MidHip(), s.MidShoulder()
	f.spine = norm(sub(sh, hip))
	f.sw = norm(sub(s.Joints[11], s.Joints[12]))
	f.hw = norm(sub(s.Joints[23], s.Joints[24]))
	if f.spine < 2 || f.sw < 1 || math.IsNaN(f.spine+f.sw) {
		return f, errors.New("the source pose is degenerate (shoulders and hips coincide)")
	}
	f.up = unit(sub(sh, hip))
	// Perpendicular to up, on the left shoulder's side.
	l := perception.Point{X: -f.up.Y, Y: f.up.X}
	if dot(l, sub(s.Joints[11], s.Joints[12])) < 0 {
		l = scale(l, -1)
	}
	f.left = l
	return f, nil
}

// dir is a unit direction with `out` along the side's outward lateral axis
// (away from the body's centre line) and `up` along the body's up axis.
func (f frame) dir(side int, out, up float64) perception.Point {
	return unit(add(scale(f.left, out*float64(side)), scale(f.up, up)))
}

// outward is the side's outward lateral unit vector.
func (f frame) outward(side int) perception.Point { return scale(f.left, float64(side)) }

// limb joint indices per side.
type limbIdx struct{ root, mid, end int }

func armOf(side int) limbIdx {
	if side == sideLeft {
		return limbIdx{11, 13, 15}
	}
	return limbIdx{12, 14, 16}
}

func legOf(side int) limbIdx {
	if side == sideLeft {
		return limbIdx{23, 25, 27}
	}
	return limbIdx{24, 26, 28}
}

func extremities(end int) []int {
	switch end {
	case 15:
		return leftHand
	case 16:
		return rightHand
	case 27:
		return leftFoot
	case 28:
		return rightFoot
	}
	return nil
}

// placeLimb sets the mid and end joints of a limb from new positions and
// carries the extremities rigidly with the end bone.
func placeLimb(f frame, t *Skeleton, l limbIdx, midP, endP perception.Point, z float64) {
	s := f.src
	oldMid, oldEnd := t.Joints[l.mid], t.Joints[l.end]
	d := wrapAngle(angle(sub(endP, midP)) - angle(sub(oldEnd, oldMid)))
	for _, j := range extremities(l.end) {
		t.Joints[j] = add(endP, rot(sub(t.Joints[j], oldEnd), d))
		t.Z[j] = s.Z[l.root] + z
	}
	t.Joints[l.mid], t.Joints[l.end] = midP, endP
	t.Z[l.mid] = s.Z[l.root] + z/2
	t.Z[l.end] = s.Z[l.root] + z
}

// limbDirs poses a limb from two directions, keeping the source lengths.
func limbDirs(f frame, t *Skeleton, l limbIdx, d1, d2 perception.Point, z float64) {
	s := f.src
	a := norm(sub(s.Joints[l.mid], s.Joints[l.root]))
	b := norm(sub(s.Joints[l.end], s.Joints[l.mid]))
	m := add(t.Joints[l.root], scale(d1, a))
	placeLimb(f, t, l, m, add(m, scale(d2, b)), z)
}

// limbIK poses a two-bone limb so that its end reaches target (as near as
// the source lengths allow), bending the middle joint towards pref.
func limbIK(f frame, t *Skeleton, l limbIdx, target, pref perception.Point, z float64) {
	s := f.src
	a := norm(sub(s.Joints[l.mid], s.Joints[l.root]))
	b := norm(sub(s.Joints[l.end], s.Joints[l.mid]))
	root := t.Joints[l.root]
	d := sub(target, root)
	L := norm(d)
	u := unit(d)
	if L < 1e-6 {
		u = scale(f.up, -1)
	}
	L = math.Min(math.Max(L, math.Abs(a-b)+1e-3), a+b-1e-3)
	cosA := (a*a + L*L - b*b) / (2 * a * L)
	A := math.Acos(math.Max(-1, math.Min(1, cosA)))
	end := add(root, scale(u, L))
	m1 := add(root, scale(rot(u, A), a))
	m2 := add(root, scale(rot(u, -A), a))
	c := mid(root, end)
	m := m1
	if dot(sub(m2, c), pref) > dot(sub(m1, c), pref) {
		m = m2
	}
	placeLimb(f, t, l, m, end, z)
}

// headCentre is the mean of the ears.
func headCentre(t *Skeleton) (perception.Point, float64) {
	return mid(t.Joints[7], t.Joints[8]), (t.Z[7] + t.Z[8]) / 2
}

// turnHead rotates the face joints about the body's up axis (yaw, positive
// turns the nose to the person's left) or the lateral axis (pitch, positive
// lifts the nose), and rolls them in the image plane. The pose model's z is
// too noisy for a head turn, so the face is modelled as a sphere through the
// ears: a joint's depth follows from its offset to the head centre.
func turnHead(f frame, t *Skeleton, yaw, pitch, roll float64) {
	c, cz := headCentre(t)
	R := norm(sub(t.Joints[7], t.Joints[8])) / 2
	if R < 1 {
		return
	}
	// Seen from behind (nose behind the ears) the turn direction flips.
	sign := 1.0
	if t.Z[0] > cz {
		sign = -1
	}
	for _, j := range faceJoints {
		p := sub(t.Joints[j], c)
		a, u := dot(p, f.left), dot(p, f.up)
		rr := math.Min(a*a+u*u, R*R*0.999)
		b := -math.Sqrt(R*R - rr)
		if j == 7 || j == 8 {
			b = 0
		}
		if yaw != 0 {
			th := yaw * sign
			a, b = a*math.Cos(th)-b*math.Sin(th), a*math.Sin(th)+b*math.Cos(th)
		}
		if pitch != 0 {
			th := pitch * sign
			u, b = u*math.Cos(th)-b*math.Sin(th), u*math.Sin(th)+b*math.Cos(th)
		}
		q := add(scale(f.left, a), scale(f.up, u))
		if roll != 0 {
			q = rot(q, roll)
		}
		t.Joints[j] = add(c, q)
		t.Z[j] = cz + b
	}
}

// lean rotates everything above the hips about the mid-hip by th radians
// towards the given side.
func lean(f frame, t *Skeleton, side int, th float64) {
	hip := t.MidHip()
	// Rotating "up" towards the side's outward direction.
	o := f.outward(side)
	cr := f.up.X*o.Y - f.up.Y*o.X
	if cr < 0 {
		th = -th
	}
	for j := 0; j <= 22; j++ {
		t.Joints[j] = add(hip, rot(sub(t.Joints[j], hip), th))
	}
}

// effect is what a vocabulary entry does to one joint group.
type effect struct {
	g     group
	prio  int // 2 = said explicitly, 1 = implied default
	apply func(f frame, t *Skeleton)
}

// entry is one vocabulary item.
type entry struct {
	Name    string   // canonical name (POSES.md, error messages)
	Phrases []string // word sequences; "{side}" matches left or right
	Sided   bool     // one limb; the side comes from the text or DefSide
	DefSide int
	Doc     string
	effects func(side int) []effect
}

func arm(side int, fn func(f frame, t *Skeleton, l limbIdx, side int)) effect {
	g := gLeftArm
	if side == sideRight {
		g = gRightArm
	}
	return effect{g: g, prio: 2, apply: func(f frame, t *Skeleton) { fn(f, t, armOf(side), side) }}
}

func leg(side int, prio int, fn func(f frame, t *Skeleton, l limbIdx, side int)) effect {
	g := gLeftLeg
	if side == sideRight {
		g = gRightLeg
	}
	return effect{g: g, prio: prio, apply: func(f frame, t *Skeleton) { fn(f, t, legOf(side), side) }}
}

func both(fn func(side int) effect) func(int) []effect {
	return func(int) []effect { return []effect{fn(sideLeft), fn(sideRight)} }
}

func one(fn func(side int) effect) func(int) []effect {
	return func(side int) []effect { return []effect{fn(side)} }
}

func armDirs(out1, up1, out2, up2, z float64) func(side int) effect {
	return func(side int) effect {
		return arm(side, func(f frame, t *Skeleton, l limbIdx, side int) {
			limbDirs(f, t, l, f.dir(side, out1, up1), f.dir(side, out2, up2), z)
		})
	}
}

func legDirs(prio int, out1, up1, out2, up2, z float64) func(side int) effect {
	return func(side int) effect {
		return leg(side, prio, func(f frame, t *Skeleton, l limbIdx, side int) {
			limbDirs(f, t, l, f.dir(side, out1, up1), f.dir(side, out2, up2), z)
		})
	}
}

// armTo reaches a point given by target(f, t, side), elbow bent outward
// (and down when down is true).
func armTo(z float64, down bool, target func(f frame, t *Skeleton, side int) perception.Point) func(side int) effect {
	return func(side int) effect {
		return arm(side, func(f frame, t *Skeleton, l limbIdx, side int) {
			pref := f.outward(side)
			if down {
				pref = add(pref, scale(f.up, -1.5))
			}
			limbIK(f, t, l, target(f, t, side), pref, z)
		})
	}
}

// hipSide is the side's hip joint. On half-body photos the pose model
// puts the hips far too high (a torso shorter than the shoulders are wide,
// which no body has): the hip is then lowered along the body so that the
// shoulder-to-hip distance is 1.5 shoulder widths, where such photos show
// the waist.
func hipSide(f frame, t *Skeleton, side int) perception.Point {
	p := t.Joints[legOf(side).root]
	if short := 1.5*f.sw - f.spine; short > 0 {
		p = add(p, scale(f.up, -short))
	}
	return p
}

func chin(t *Skeleton) perception.Point {
	m := mid(t.Joints[9], t.Joints[10])
	return add(m, scale(sub(m, t.Joints[0]), 1.3))
}

// vocabulary is the list of known poses (documented in POSES.md).
var vocabulary = []entry{
	{Name: "arms crossed", Phrases: []string{"arms crossed", "crossed arms", "crossing arms", "arms folded", "folded arms", "folding arms", "crossing her arms", "crossing his arms", "crossing their arms"},
		Doc: "both forearms across the chest, each hand near the other elbow",
		effects: func(int) []effect {
			// Upper arms hang, forearms run across the chest to the other side.
			return []effect{armDirs(0.06, -1, -1, 0.45, -1.2*f0)(sideLeft), armDirs(0.06, -1, -1, 0.3, -1.0*f0)(sideRight)}
		}},
	{Name: "hands on hips", Phrases: []string{"hands on hips", "hands on her hips", "hands on his hips", "hands on the hips", "hands on waist", "hands on her waist", "hands on his waist", "akimbo", "arms akimbo"},
		Doc: "both hands on the waist, elbows out",
		effects: both(armTo(0, false, func(f frame, t *Skeleton, side int) perception.Point {
			return add(add(hipSide(f, t, side), scale(f.up, 0.18*f.spine)), scale(f.outward(side), 0.5*f.hw))
		}))},
	{Name: "hand on hip", Phrases: []string{"hand on hip", "hand on her hip", "hand on his hip", "hand on the hip", "hand on {side} hip", "hand on her {side} hip", "hand on his {side} hip", "hand on waist", "one hand on hip"},
		Sided: true, DefSide: sideLeft, Doc: "one hand on the waist, elbow out (default: left)",
		effects: one(armTo(0, false, func(f frame, t *Skeleton, side int) perception.Point {
			return add(add(hipSide(f, t, side), scale(f.up, 0.18*f.spine)), scale(f.outward(side), 0.5*f.hw))
		}))},
	{Name: "arms raised", Phrases: []string{"arms raised", "raised arms", "raising arms", "raising her arms", "raising his arms", "arms up", "hands up", "arms in the air", "hands in the air", "arms overhead", "arms above head", "hands above head", "both arms raised", "both arms up", "victory pose", "celebrating"},
		Doc:     "both arms up above the shoulders",
		effects: both(armDirs(0.28, 1, 0.12, 1, 0))},
	{Name: "arm raised", Phrases: []string{"arm raised", "raised arm", "raising arm", "raising one arm", "one arm up", "raising {side} arm", "{side} arm up", "{side} arm raised", "raising her {side} arm", "raising his {side} arm", "raising hand", "hand raised", "raised hand"},
		Sided: true, DefSide: sideRight, Doc: "one arm straight up (default: right)",
		effects: one(armDirs(0.28, 1, 0.12, 1, 0))},
	{Name: "t-pose", Phrases: []string{"t pose", "tpose", "arms outstretched", "outstretched arms", "arms stretched out", "arms horizontal", "arms spread", "spread arms"},
		Doc:     "both arms straight out to the sides, horizontal",
		effects: both(armDirs(1, 0, 1, 0, 0))},
	{Name: "arms out", Phrases: []string{"arms out", "open arms", "arms open", "arms wide", "welcoming"},
		Doc:     "both arms open, angled down about 30 degrees",
		effects: both(armDirs(1, -0.55, 1, -0.45, 0))},
	{Name: "arms down", Phrases: []string{"arms down", "arms at sides", "arms at her sides", "arms at his sides", "arms by sides", "arms relaxed", "relaxed arms", "hands at sides", "arms hanging"},
		Doc:     "both arms hanging relaxed along the body",
		effects: both(armDirs(0.16, -1, 0.06, -1, 0))},
	{Name: "waving", Phrases: []string{"waving", "wave", "waves", "waving {side} hand", "hello"},
		Sided: true, DefSide: sideRight, Doc: "upper arm out to the side, forearm up (default: right hand)",
		effects: one(armDirs(1, 0.12, 0.22, 1, -0.1*f0))},
	{Name: "pointing", Phrases: []string{"pointing", "points", "pointing {side}", "pointing to the side", "pointing away"},
		Sided: true, DefSide: sideRight, Doc: "one arm straight out to the side, slightly up (default: right)",
		effects: one(armDirs(1, 0.18, 1, 0.22, 0))},
	{Name: "hand on chin", Phrases: []string{"hand on chin", "hand on her chin", "hand on his chin", "hand under chin", "chin in hand", "thinking", "thoughtful", "pensive", "hand to chin"},
		Sided: true, DefSide: sideRight, Doc: "one hand at the chin, elbow down (default: right)",
		effects: one(armTo(-0.4*f0, true, func(f frame, t *Skeleton, side int) perception.Point {
			// The wrist sits below the chin so that the hand reaches it.
			l := armOf(side)
			hand := 0.0
			for _, j := range extremities(l.end) {
				hand = math.Max(hand, norm(sub(f.src.Joints[j], f.src.Joints[l.end])))
			}
			return add(add(chin(t), scale(f.up, -1.1*hand)), scale(f.outward(side), 0.08*f.sw))
		}))},
	{Name: "hands on head", Phrases: []string{"hands on head", "hands on her head", "hands on his head", "hands behind head", "hands behind her head", "hands behind his head", "hands behind the head", "hands in hair", "hands in her hair"},
		Doc: "both hands on top of the head, elbows out",
		effects: both(armTo(0.15*f0, false, func(f frame, t *Skeleton, side int) perception.Point {
			c, _ := headCentre(t)
			e := norm(sub(t.Joints[7], t.Joints[8]))
			return add(add(c, scale(f.up, 0.75*e)), scale(f.outward(side), 0.35*e))
		}))},
	{Name: "hand in pocket", Phrases: []string{"hand in pocket", "hand in her pocket", "hand in his pocket", "hand in the pocket", "hand in {side} pocket", "one hand in pocket", "hand in her {side} pocket", "hand in his {side} pocket"},
		Sided: true, DefSide: sideLeft, Doc: "one hand at the front trouser pocket (default: left)",
		effects: one(armTo(-0.1*f0, false, func(f frame, t *Skeleton, side int) perception.Point {
			return add(add(hipSide(f, t, side), scale(f.up, -0.1*f.spine)), scale(f.outward(side), -0.05*f.hw))
		}))},
	{Name: "hands in pockets", Phrases: []string{"hands in pockets", "hands in her pockets", "hands in his pockets", "hands in the pockets", "both hands in pockets"},
		Doc: "both hands at the front pockets",
		effects: both(armTo(-0.1*f0, false, func(f frame, t *Skeleton, side int) perception.Point {
			return add(add(hipSide(f, t, side), scale(f.up, -0.1*f.spine)), scale(f.outward(side), -0.05*f.hw))
		}))},
	{Name: "arms behind back", Phrases: []string{"arms behind back", "arms behind her back", "arms behind his back", "hands behind back", "hands behind her back", "hands behind his back", "arms behind the back", "hands behind the back"},
		Doc: "both hands behind the lower back (drawn behind the body)",
		effects: both(armTo(1.5*f0, false, func(f frame, t *Skeleton, side int) perception.Point {
			return add(add(t.MidHip(), scale(f.up, 0.22*f.spine)), scale(f.outward(side), 0.12*f.hw))
		}))},
	{Name: "hands clasped", Phrases: []string{"hands clasped", "clasped hands", "hands together", "holding hands together", "hands folded", "folded hands"},
		Doc: "both hands together in front of the belly",
		effects: both(armTo(-0.3*f0, false, func(f frame, t *Skeleton, side int) perception.Point {
			return add(add(t.MidHip(), scale(f.up, 0.12*f.spine)), scale(f.outward(side), 0.03*f.hw))
		}))},
	{Name: "flexing", Phrases: []string{"flexing", "flexing arms", "flexing biceps", "showing biceps", "muscle pose", "strongman"},
		Doc:     "both upper arms out, forearms up (biceps pose)",
		effects: both(armDirs(1, 0.05, 0.05, 1, 0))},
	{Name: "walking", Phrases: []string{"walking", "walk", "walks", "mid stride", "striding", "stride", "in motion", "stepping forward"},
		Doc: "a stride: the left leg out and forward, the right knee bent back",
		effects: func(int) []effect {
			return []effect{legDirs(2, 0.26, -1, 0.1, -1, -0.2*f0)(sideLeft), legDirs(2, -0.02, -1, 0.22, -1, 0.2*f0)(sideRight)}
		}},
	{Name: "side step", Phrases: []string{"side step", "sidestep", "stepping to the side", "step to the side", "stepping {side}", "stepping sideways"},
		Sided: true, DefSide: sideLeft, Doc: "one leg stepped out to the side (default: left)",
		effects: func(side int) []effect {
			return []effect{legDirs(2, 0.48, -1, 0.4, -1, 0)(side), legDirs(1, 0.05, -1, 0.02, -1, 0)(-side)}
		}},
	{Name: "legs apart", Phrases: []string{"legs apart", "wide stance", "feet apart", "legs wide", "power stance", "power pose"},
		Doc:     "both legs apart in a wide stance",
		effects: both(legDirs(2, 0.32, -1, 0.26, -1, 0))},
	{Name: "seated", Phrases: []string{"seated", "sitting", "sitting down", "sits", "sit", "sitting pose"},
		Doc: "thighs horizontal towards the model's left, shins down (a seated side view; no chair is drawn)",
		effects: func(int) []effect {
			fn := func(side int) effect {
				return leg(side, 2, func(f frame, t *Skeleton, l limbIdx, side int) {
					// Both thighs point to the person's left (absolute, not outward).
					d1 := unit(add(f.left, scale(f.up, -0.18)))
					d2 := unit(add(scale(f.left, 0.08), scale(f.up, -1)))
					limbDirs(f, t, l, d1, d2, -0.1*f0*float64(side))
				})
			}
			return []effect{fn(sideLeft), fn(sideRight)}
		}},
	{Name: "legs crossed", Phrases: []string{"legs crossed", "crossed legs", "crossing legs", "ankles crossed", "crossed ankles"},
		Doc: "standing with the left shin crossed in front of the right",
		effects: func(int) []effect {
			return []effect{legDirs(2, -0.06, -1, -0.3, -1, -0.3*f0)(sideLeft), legDirs(2, 0.05, -1, 0.02, -1, 0)(sideRight)}
		}},
	{Name: "standing", Phrases: []string{"standing", "standing straight", "standing upright", "stands", "legs straight", "straight legs", "upright"},
		Doc:     "both legs straight, feet slightly apart (a default that other leg poses override)",
		effects: both(legDirs(1, 0.07, -1, 0.02, -1, 0))},
	{Name: "weight on one leg", Phrases: []string{"weight on one leg", "contrapposto", "hip pop", "popped hip", "relaxed knee", "one knee bent", "knee bent", "bent knee", "bending {side} knee", "{side} knee bent"},
		Sided: true, DefSide: sideRight, Doc: "one knee relaxed and bent inward, the other leg straight (default: right knee)",
		effects: func(side int) []effect {
			return []effect{legDirs(2, 0.0, -1, -0.16, -1, -0.1*f0)(side), legDirs(1, 0.08, -1, 0.02, -1, 0)(-side)}
		}},
	{Name: "leaning", Phrases: []string{"leaning", "leaning {side}", "leaning to the {side}", "leaning to {side}", "lean", "leans", "tilted body", "leaning sideways"},
		Sided: true, DefSide: sideLeft, Doc: "the upper body tilted 12 degrees to one side about the hips (default: left)",
		effects: func(side int) []effect {
			return []effect{{g: gTorso, prio: 2, apply: func(f frame, t *Skeleton) { lean(f, t, side, 12*math.Pi/180) }}}
		}},
	{Name: "looking left", Phrases: []string{"looking left", "looking to the left", "looks left", "look left", "head turned left", "head turned to the left", "turning head left", "facing left", "glancing left"},
		Doc:     "head turned about 35 degrees to the model's left (an in-plane approximation)",
		effects: headFx(35, 0, 0)},
	{Name: "looking right", Phrases: []string{"looking right", "looking to the right", "looks right", "look right", "head turned right", "head turned to the right", "turning head right", "facing right", "glancing right"},
		Doc:     "head turned about 35 degrees to the model's right (an in-plane approximation)",
		effects: headFx(-35, 0, 0)},
	{Name: "looking up", Phrases: []string{"looking up", "looks up", "look up", "head up", "chin up", "gazing up"},
		Doc:     "head raised about 20 degrees",
		effects: headFx(0, 20, 0)},
	{Name: "looking down", Phrases: []string{"looking down", "looks down", "look down", "head down", "chin down", "gazing down"},
		Doc:     "head lowered about 20 degrees",
		effects: headFx(0, -20, 0)},
	{Name: "head tilted", Phrases: []string{"head tilted", "tilted head", "tilting head", "head tilt", "tilting her head", "tilting his head", "head tilted {side}", "head tilted to the {side}"},
		Sided: true, DefSide: sideRight, Doc: "head rolled 12 degrees towards one shoulder (default: right)",
		effects: func(side int) []effect {
			return []effect{{g: gHead, prio: 2, apply: func(f frame, t *Skeleton) {
				// Roll towards the side: the head top moves to that side.
				th := 12 * math.Pi / 180
				o := f.outward(side)
				if f.up.X*o.Y-f.up.Y*o.X < 0 {
					th = -th
				}
				turnHead(f, t, 0, 0, th)
			}}}
		}},
	{Name: "looking at camera", Phrases: []string{"looking at camera", "looking at the camera", "looking straight", "facing camera", "facing the camera", "facing forward", "looking forward"},
		Doc:     "head kept as in the source (an explicit no-change for the head)",
		effects: headFx(0, 0, 0)},
}

// f0 scales depth offsets; depths are in pixels of the source (BlazePose z),
// applied relative to the limb root. 100 px marks clearly in front/behind.
const f0 = 100.0

func headFx(yawDeg, pitchDeg, rollDeg float64) func(int) []effect {
	return func(int) []effect {
		return []effect{{g: gHead, prio: 2, apply: func(f frame, t *Skeleton) {
			turnHead(f, t, yawDeg*math.Pi/180, pitchDeg*math.Pi/180, rollDeg*math.Pi/180)
		}}}
	}
}

// KnownPoses lists the vocabulary's canonical names.
func KnownPoses() []string {
	out := make([]string, len(vocabulary))
	for i, e := range vocabulary {
		out[i] = e.Name
	}
	return out
}

// stopWords are ignored without a note.
var stopWords = map[string]bool{"a": true, "an": true, "the": true, "with": true, "and": true, "while": true, "model": true,
	"person": true, "pose": true, "posing": true, "her": true, "his": true, "their": true, "one": true, "both": true,
	"is": true, "in": true, "to": true, "of": true, "on": true, "at": true, "slightly": true, "camera": true, "front": true,
	"man": true, "woman": true, "girl": true, "boy": true, "he": true, "she": true, "they": true, "full": true, "body": true,
	"shot": true, "photo": true, "picture": true, "image": true, "confident": true, "casual": true, "natural": true,
	"relaxed": true, "then": true, "also": true, "as": true, "by": true, "for": true, "gently": true, "softly": true,
	"hand": true, "hands": true, "arm": true, "arms": true, "leg": true, "legs": true, "left": true, "right": true,
	"using": true, "side": true, "very": true, "little": true, "bit": true, "fashion": true}

// maxPoseText bounds the text looked at: the spec's limit of a custom pose.
const maxPoseText = spec.MaxShortTextChars

// ParsedPose is the result of reading a pose text.
type ParsedPose struct {
	// Matched lists the vocabulary entries found, with the side for
	// one-sided entries ("hand on hip (left)").
	Matched []string
	// Ignored lists words that were not understood (they did not stop the
	// pose from being built).
	Ignored []string
	effects []effect
}

func tokenize(text string) []string {
	if len(text) > maxPoseText {
		text = text[:maxPoseText]
	}
	text = strings.ToLower(text)
	var b strings.Builder
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.Fields(b.String())
}

type phrase struct {
	e     int
	words []string
}

var phrases = func() []phrase {
	var ps []phrase
	for i, e := range vocabulary {
		for _, p := range e.Phrases {
			ps = append(ps, phrase{e: i, words: strings.Fields(p)})
		}
	}
	// Longest first, so "hands on hips" wins over "hands".
	sort.SliceStable(ps, func(a, b int) bool { return len(ps[a].words) > len(ps[b].words) })
	return ps
}()

func sideWord(w string) int {
	switch w {
	case "left":
		return sideLeft
	case "right":
		return sideRight
	}
	return 0
}

// ParsePoseText reads a pose description into vocabulary entries. It fails
// when nothing in the text is a known pose, or when two poses said in the
// text move the same body part.
func ParsePoseText(text string) (ParsedPose, error) {
	var pp ParsedPose
	toks := tokenize(text)
	used := make([]bool, len(toks))
	owner := map[group]string{}
	for i := 0; i < len(toks); i++ {
		if used[i] {
			continue
		}
		for _, ph := range phrases {
			side, ok := matchAt(toks, used, i, ph.words)
			if !ok {
				continue
			}
			e := vocabulary[ph.e]
			n := len(ph.words)
			for k := i; k < i+n; k++ {
				used[k] = true
			}
			if e.Sided && side == 0 {
				// "left hand on hip", "the right arm raised"
				for k := i - 1; k >= 0 && k >= i-2; k-- {
					if s := sideWord(toks[k]); s != 0 {
						side = s
						used[k] = true
						break
					}
					if !stopWords[toks[k]] {
						break
					}
				}
			}
			if e.Sided && side == 0 {
				// "waving with the left hand", "pointing right"
				for k := i + n; k < len(toks) && k < i+n+4; k++ {
					if s := sideWord(toks[k]); s != 0 {
						side = s
						used[k] = true
						break
					}
					if !stopWords[toks[k]] {
						break
					}
				}
			}
			if side == 0 {
				side = e.DefSide
			}
			name := e.Name
			if e.Sided {
				name += map[int]string{sideLeft: " (left)", sideRight: " (right)"}[side]
			}
			for _, ef := range e.effects(side) {
				if ef.prio < 2 {
					continue
				}
				if prev, clash := owner[ef.g]; clash && prev != name {
					return pp, fmt.Errorf("pose text %q: %q and %q both move the %s", clip(text), prev, name, groupNames[ef.g])
				}
				owner[ef.g] = name
			}
			pp.Matched = append(pp.Matched, name)
			pp.effects = append(pp.effects, e.effects(side)...)
			i += n - 1
			break
		}
	}
	for i, w := range toks {
		if !used[i] && !stopWords[w] {
			pp.Ignored = append(pp.Ignored, w)
		}
	}
	if len(pp.Matched) == 0 {
		return pp, fmt.Errorf("pose text %q not understood; known poses: %s", clip(text), strings.Join(KnownPoses(), ", "))
	}
	return pp, nil
}

func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strings.ToValidUTF8(s, "")
}

// matchAt matches phrase words at toks[i:], "{side}" matching left/right.
func matchAt(toks []string, used []bool, i int, words []string) (int, bool) {
	if i+len(words) > len(toks) {
		return 0, false
	}
	side := 0
	for k, w := range words {
		t := toks[i+k]
		if used[i+k] {
			return 0, false
		}
		if w == "{side}" {
			s := sideWord(t)
			if s == 0 {
				return 0, false
			}
			side = s
			continue
		}
		if t != w {
			return 0, false
		}
	}
	return side, true
}

// TargetFromText builds the target skeleton for a custom pose text on the
// source pose: the source skeleton with the parts the text names moved
// (source bone lengths kept). Parts the text does not name stay as they are.
func TargetFromText(text string, src *perception.Pose) (Skeleton, error) {
	pp, err := ParsePoseText(text)
	if err != nil {
		return Skeleton{}, err
	}
	if src == nil {
		return Skeleton{}, errors.New("no source pose")
	}
	return pp.Apply(AllKnown(SkeletonFromPose(src, 0, 0)))
}

// Apply moves the source skeleton as parsed. Effects run torso first, then
// head, legs and arms; implied defaults run before what the text said.
func (pp ParsedPose) Apply(src Skeleton) (Skeleton, error) {
	f, err := newFrame(src)
	if err != nil {
		return Skeleton{}, err
	}
	t := src
	order := []group{gTorso, gHead, gLeftLeg, gRightLeg, gLeftArm, gRightArm}
	for _, g := range order {
		for _, prio := range []int{1, 2} {
			for _, ef := range pp.effects {
				if ef.g == g && ef.prio == prio {
					ef.apply(f, &t)
				}
			}
		}
	}
	for i := range t.Joints {
		if math.IsNaN(t.Joints[i].X) || math.IsNaN(t.Joints[i].Y) || math.IsInf(t.Joints[i].X, 0) || math.IsInf(t.Joints[i].Y, 0) {
			return Skeleton{}, errors.New("the pose could not be built on this body (non-finite joint)")
		}
	}
	return t, nil
}

// PosePhrases maps each vocabulary pose's canonical name to the phrases
// that ask for it ("{side}" matches left or right), for the vocabulary's
// documentation.
func PosePhrases() map[string][]string {
	out := make(map[string][]string, len(vocabulary))
	for _, e := range vocabulary {
		out[e.Name] = append([]string(nil), e.Phrases...)
	}
	return out
}
