package imagetovideo

import (
	"image"
	"math"

	"fashiond/perception"
)

// anchor is a pose keypoint in world coordinates with its motion role.
type anchor struct {
	x, y float64
	role int
}

const (
	rolePlanted = iota // feet, and the frame bottom of a half-body shot
	roleKnee
	roleHip
	roleShoulder
	roleArm
	roleHead
)

// bodyMotion is a smooth displacement field anchored on pose keypoints:
// feet stay planted, hips sway a little, the torso breathes (shoulders rise
// and fall: a slow vertical stretch of the torso) and sways, the head
// follows with a small independent drift, arms follow the shoulders with a
// lag (the sleeves move with them), and hair (from the parsing model) adds a
// slow ripple travelling downwards.
type bodyMotion struct {
	anchors []anchor
	sigma   float64 // RBF width in world pixels
	height  float64 // person height in world pixels
	box     image.Rectangle
	// grid of displacements (x,y) for the current frame
	step   int
	gw, gh int
	dx, dy []float32
	// precomputed normalised RBF weights per grid node and anchor
	wts [][]float32
	// hair weight per grid node (0..1): hair sways on top of the body
	hair []float32
}

// setHair samples a hair probability mask (world coordinates: hair(x, y)
// in 0..1) at the grid nodes.
func (bm *bodyMotion) setHair(hair func(x, y int) float32) {
	bm.hair = make([]float32, bm.gw*bm.gh)
	for gy := 0; gy < bm.gh; gy++ {
		for gx := 0; gx < bm.gw; gx++ {
			bm.hair[gy*bm.gw+gx] = hair(bm.box.Min.X+gx*bm.step, bm.box.Min.Y+gy*bm.step)
		}
	}
}

// newBodyMotion builds the field from a pose given in source pixels, mapped
// to world coordinates by (x*scale+offX, y*scale+offY). box is the person's
// bounding box in world coordinates.
func newBodyMotion(p *perception.Pose, scale, offX, offY float64, box image.Rectangle, worldH int) *bodyMotion {
	bm := &bodyMotion{box: box, height: float64(box.Dy()), step: 12}
	if bm.height < 8 {
		return nil
	}
	add := func(i, role int) {
		if p == nil {
			return
		}
		k := p.Keypoints[i]
		if k.Visibility < 0.4 {
			return
		}
		x, y := k.X*scale+offX, k.Y*scale+offY
		if x < float64(box.Min.X)-20 || x > float64(box.Max.X)+20 || y < float64(box.Min.Y)-20 || y > float64(box.Max.Y)+20 {
			return
		}
		bm.anchors = append(bm.anchors, anchor{x, y, role})
	}
	feet := 0
	for _, i := range []int{27, 28, 29, 30, 31, 32} {
		n := len(bm.anchors)
		add(i, rolePlanted)
		feet += len(bm.anchors) - n
	}
	add(perception.KpLeftKnee, roleKnee)
	add(perception.KpRightKnee, roleKnee)
	add(perception.KpLeftHip, roleHip)
	add(perception.KpRightHip, roleHip)
	add(perception.KpLeftShoulder, roleShoulder)
	add(perception.KpRightShoulder, roleShoulder)
	for _, i := range []int{13, 14, 15, 16, 17, 18, 19, 20, 21, 22} {
		add(i, roleArm)
	}
	for _, i := range []int{0, 2, 5, 7, 8} {
		add(i, roleHead)
	}
	// The bottom edge stays put: always for feet, and for half-body shots
	// (the body continues below the frame).
	if feet == 0 || box.Max.Y >= worldH-2 {
		for k := 0; k <= 4; k++ {
			x := float64(box.Min.X) + float64(box.Dx())*float64(k)/4
			bm.anchors = append(bm.anchors, anchor{x, float64(box.Max.Y), rolePlanted})
		}
	}
	hasUpper := false
	for _, a := range bm.anchors {
		if a.role == roleShoulder || a.role == roleHead {
			hasUpper = true
		}
	}
	if !hasUpper {
		// No usable pose: a gentle sway of the top of the silhouette.
		bm.anchors = append(bm.anchors, anchor{float64(box.Min.X+box.Max.X) / 2, float64(box.Min.Y) + bm.height*0.2, roleShoulder})
	}
	bm.sigma = math.Max(6, 0.11*bm.height)
	// grid over the box plus a margin
	m := int(0.05*bm.height) + bm.step
	bm.box = image.Rect(box.Min.X-m, box.Min.Y-m, box.Max.X+m, box.Max.Y+m)
	bm.gw = bm.box.Dx()/bm.step + 2
	bm.gh = bm.box.Dy()/bm.step + 2
	bm.dx = make([]float32, bm.gw*bm.gh)
	bm.dy = make([]float32, bm.gw*bm.gh)
	bm.wts = make([][]float32, bm.gw*bm.gh)
	inv := 1 / (2 * bm.sigma * bm.sigma)
	for gy := 0; gy < bm.gh; gy++ {
		for gx := 0; gx < bm.gw; gx++ {
			px := float64(bm.box.Min.X + gx*bm.step)
			py := float64(bm.box.Min.Y + gy*bm.step)
			w := make([]float32, len(bm.anchors))
			var sum float64
			for i, a := range bm.anchors {
				d2 := (px-a.x)*(px-a.x) + (py-a.y)*(py-a.y)
				v := math.Exp(-d2*inv) + 1e-9
				w[i] = float32(v)
				sum += v
			}
			for i := range w {
				w[i] = float32(float64(w[i]) / sum)
			}
			bm.wts[gy*bm.gw+gx] = w
		}
	}
	return bm
}

// update computes the displacement grid for time tau (seconds). The
// returned grid moves the person: a point p of the still is shown at
// p + D(p).
func (bm *bodyMotion) update(tau float64) {
	H := bm.height
	sway := 0.0065 * H * math.Sin(2*math.Pi*0.16*tau)
	breath := 0.0045 * H * (0.5 - 0.5*math.Cos(2*math.Pi*0.25*tau))
	headX := sway*1.1 + 0.003*H*math.Sin(2*math.Pi*0.21*tau+0.7)
	headY := -breath*1.1 + 0.0015*H*math.Sin(2*math.Pi*0.13*tau)
	armX := sway*0.9 + 0.003*H*math.Sin(2*math.Pi*0.16*tau-0.9)
	var ax, ay [6]float64
	ax[rolePlanted], ay[rolePlanted] = 0, 0
	ax[roleKnee], ay[roleKnee] = 0.15*sway, 0
	ax[roleHip], ay[roleHip] = 0.45*sway, -0.1*breath
	ax[roleShoulder], ay[roleShoulder] = sway, -breath
	ax[roleArm], ay[roleArm] = armX, -0.8*breath
	ax[roleHead], ay[roleHead] = headX, headY
	for g, w := range bm.wts {
		var x, y float64
		for i, a := range bm.anchors {
			x += float64(w[i]) * ax[a.role]
			y += float64(w[i]) * ay[a.role]
		}
		if bm.hair != nil && bm.hair[g] > 0 {
			// a slow ripple travelling down the hair
			gy := g / bm.gw
			ph := 2*math.Pi*0.45*tau - float64(gy*bm.step)/(0.08*H)
			x += float64(bm.hair[g]) * 0.004 * H * math.Sin(ph)
		}
		bm.dx[g], bm.dy[g] = float32(x), float32(y)
	}
}

// at returns the displacement at world point (x, y) (zero outside the grid).
func (bm *bodyMotion) at(x, y float32) (float32, float32) {
	fx := (x - float32(bm.box.Min.X)) / float32(bm.step)
	fy := (y - float32(bm.box.Min.Y)) / float32(bm.step)
	if fx < 0 || fy < 0 || fx >= float32(bm.gw-1) || fy >= float32(bm.gh-1) {
		return 0, 0
	}
	x0, y0 := int(fx), int(fy)
	ax, ay := fx-float32(x0), fy-float32(y0)
	i := y0*bm.gw + x0
	w00, w01, w10, w11 := (1-ax)*(1-ay), ax*(1-ay), (1-ax)*ay, ax*ay
	dx := bm.dx[i]*w00 + bm.dx[i+1]*w01 + bm.dx[i+bm.gw]*w10 + bm.dx[i+bm.gw+1]*w11
	dy := bm.dy[i]*w00 + bm.dy[i+1]*w01 + bm.dy[i+bm.gw]*w10 + bm.dy[i+bm.gw+1]*w11
	return dx, dy
}
