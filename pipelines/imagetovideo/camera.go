package imagetovideo

import (
	"math"
	"strings"
)

// Move is a camera move chosen from the prompt.
type Move string

const (
	PushIn   Move = "push-in"
	PullOut  Move = "pull-out"
	PanLeft  Move = "pan-left"
	PanRight Move = "pan-right"
	Orbit    Move = "orbit"
	TiltUp   Move = "tilt-up"
	TiltDown Move = "tilt-down"
	Static   Move = "static"
)

// movePhrases maps prompt phrases to moves. The phrase found earliest in
// the prompt wins; without any, the default is a gentle push-in.
var movePhrases = []struct {
	phrase string
	move   Move
}{
	{"push in", PushIn}, {"push-in", PushIn}, {"zoom in", PushIn}, {"dolly in", PushIn},
	{"move in", PushIn}, {"moves in", PushIn}, {"closer", PushIn}, {"close up", PushIn}, {"close-up", PushIn},
	{"pull out", PullOut}, {"pull-out", PullOut}, {"pull back", PullOut}, {"zoom out", PullOut},
	{"dolly out", PullOut}, {"pulls back", PullOut}, {"reveal", PullOut}, {"wide shot", PullOut},
	{"pan left", PanLeft}, {"pans left", PanLeft}, {"panning left", PanLeft}, {"track left", PanLeft},
	{"truck left", PanLeft}, {"slide left", PanLeft},
	{"pan right", PanRight}, {"pans right", PanRight}, {"panning right", PanRight}, {"track right", PanRight},
	{"truck right", PanRight}, {"slide right", PanRight},
	{"orbit", Orbit}, {"circle around", Orbit}, {"around the model", Orbit}, {"around her", Orbit},
	{"around him", Orbit}, {"arc shot", Orbit}, {"rotate around", Orbit}, {"360", Orbit},
	{"tilt up", TiltUp}, {"tilts up", TiltUp}, {"crane up", TiltUp}, {"pedestal up", TiltUp}, {"look up", TiltUp},
	{"tilt down", TiltDown}, {"tilts down", TiltDown}, {"crane down", TiltDown}, {"look down", TiltDown},
	{"static", Static}, {"still camera", Static}, {"locked off", Static}, {"tripod", Static}, {"no camera", Static},
	{"pan", PanRight}, {"zoom", PushIn}, {"tilt", TiltUp},
}

// normalise lowercases and collapses everything but letters, digits and
// '-' into single spaces, with a space at both ends.
func normalise(s string) string {
	var b strings.Builder
	b.WriteByte(' ')
	space := true
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	if !space {
		b.WriteByte(' ')
	}
	return b.String()
}

// firstMatch returns the index of the phrase found earliest in the
// normalised text (as whole words), or -1.
func firstMatch(norm string, phrases []string) int {
	best, bestPos := -1, math.MaxInt
	for i, p := range phrases {
		pos := strings.Index(norm, " "+p+" ")
		if pos < 0 {
			// allow plural/verb endings on the last word ("zooms", "orbiting")
			pos = strings.Index(norm, " "+p)
			if pos >= 0 {
				rest := norm[pos+1+len(p):]
				end := strings.IndexByte(rest, ' ')
				if end < 0 || end > 3 {
					pos = -1
				}
			}
		}
		if pos >= 0 && pos < bestPos {
			best, bestPos = i, pos
		}
	}
	return best
}

// ChooseMove picks the camera move from the prompt.
func ChooseMove(prompt string) Move {
	ps := make([]string, len(movePhrases))
	for i, m := range movePhrases {
		ps[i] = m.phrase
	}
	if i := firstMatch(normalise(prompt), ps); i >= 0 {
		return movePhrases[i].move
	}
	return PushIn
}

// camera is the per-frame view: screen = Cs + S(d)*(world - Cw) + Shift +
// Truck*(d - pivot), with S(d) = 1 + (Zoom-1)*(1 + Parallax*(d - pivot)).
type camera struct {
	Zoom, Parallax float64
	ShiftX, ShiftY float64
	TruckX, TruckY float64
}

// ease is a smooth 0..1 ramp (ease in and out).
func ease(t float64) float64 {
	t = math.Max(0, math.Min(1, t))
	return t * t * (3 - 2*t)
}

// cameraAt returns the camera at fraction t (0..1) of the clip for an
// output of width w and height h whose world canvas has margin m (world =
// output * m).
func cameraAt(mv Move, t float64, w, h int, m float64) camera {
	e := ease(t)
	W, H := float64(w), float64(h)
	// the largest shift that keeps the view inside the world at zoom z
	room := func(z, size float64) float64 { return size * (m - 1/z) / 2 * 0.9 }
	switch mv {
	case PushIn:
		return camera{Zoom: 1 + 0.07*e, Parallax: 1.6}
	case PullOut:
		return camera{Zoom: 1.1 - 0.1*e, Parallax: 1.6}
	case PanLeft, PanRight:
		z := 1.04
		a := room(z, W) * 0.55
		s := a * (2*e - 1)
		if mv == PanLeft {
			s = -s // camera pans left: the scene slides right... view moves left
		}
		return camera{Zoom: z, Parallax: 0.5, ShiftX: -s, TruckX: -0.6 * s}
	case Orbit:
		z := 1.05
		a := room(z, W) * 0.9
		s := a * (2*e - 1)
		return camera{Zoom: z, Parallax: 0.8, TruckX: 2 * s, ShiftX: 0}
	case TiltUp, TiltDown:
		z := 1.04
		a := room(z, H) * 0.6
		s := a * (2*e - 1)
		if mv == TiltUp {
			s = -s
		}
		return camera{Zoom: z, Parallax: 0.5, ShiftY: -s, TruckY: -0.4 * s}
	default: // Static: the body moves, the camera breathes very slightly
		return camera{Zoom: 1.01 + 0.004*math.Sin(2*math.Pi*t), Parallax: 1}
	}
}
