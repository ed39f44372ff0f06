package recolour

import (
	"math"
	"math/rand/v2"

	"fashiond/pipelines/capability/raster"
)

// patternField evaluates a pattern over the image in a body frame: u runs
// across the shoulders, v down the torso axis, both in pixels from the
// waist, displaced along v by the local shading detail so that stripes and
// checks bend a little with the folds. at returns the weights of the accent
// colour and of a third colour (plaid lines, flower centres).
type patternField struct {
	kind           string
	period         float64 // pixels
	phaseU, phaseV float64 // in periods
	wx, wy         float64
	ux, uy         float64       // across (unit)
	vx, vy         float64       // down (unit)
	fold           *raster.Plane // v displacement in pixels
	seed           uint64
}

func newPatternField(r *Regions, kind string, rng *rand.Rand, vary bool) *patternField {
	pf := &patternField{kind: kind, wx: r.waistX, wy: r.waistY, seed: rng.Uint64()}
	pf.vx, pf.vy = -r.upX, -r.upY
	pf.ux, pf.uy = -r.upY, r.upX
	if pf.ux < 0 {
		pf.ux, pf.uy = -pf.ux, -pf.uy
	}
	div := map[string]float64{
		PatternStripes: 7, PatternVStripes: 7, PatternPinstripe: 9, PatternChecks: 5,
		PatternGingham: 10, PatternPlaid: 3, PatternPolkaDots: 6, PatternHoundstooth: 12,
		PatternFloral: 4, PatternDenim: 60,
	}[kind]
	if div == 0 {
		return pf
	}
	pf.period = math.Max(r.shoulder/div, 3)
	if vary {
		pf.period *= 1 + (rng.Float64()*2-1)*0.12
		pf.phaseU, pf.phaseV = rng.Float64(), rng.Float64()
	}
	// Fold displacement from the luminance detail.
	base := raster.WideBlur(r.lum, math.Max(r.shoulder*0.05, 2))
	pf.fold = raster.NewPlane(r.w, r.h)
	amp := float32(r.shoulder * 0.04)
	for i, l := range r.lum.P {
		d := (l - base.P[i]) / (base.P[i] + 0.02)
		pf.fold.P[i] = amp * min(max(d, -1.5), 1.5)
	}
	return pf
}

// sq is an anti-aliased square wave: 1 where frac(f) < duty; px is one
// pixel in periods.
func sq(f, duty, px float64) float64 {
	f -= math.Floor(f)
	var sd float64
	if f < duty {
		sd = math.Min(f, duty-f)
	} else {
		sd = -math.Min(f-duty, 1-f)
	}
	return math.Min(math.Max(sd/px+0.5, 0), 1)
}

func frac(f float64) float64 { return f - math.Floor(f) }

// cellHash gives a reproducible uniform in [0,1) for a grid cell.
func cellHash(seed uint64, i, j, k int64) float64 {
	z := seed ^ uint64(i)*0x9E3779B97F4A7C15 ^ uint64(j)*0xC2B2AE3D27D4EB4F ^ uint64(k)*0x165667B19E3779F9
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

func (pf *patternField) at(x, y int) (float32, float32) {
	if pf.period == 0 {
		return 0, 0
	}
	dx, dy := float64(x)-pf.wx, float64(y)-pf.wy
	u := dx*pf.ux + dy*pf.uy
	v := dx*pf.vx + dy*pf.vy + float64(pf.fold.P[y*pf.fold.W+x])
	P := pf.period
	fu, fv := u/P+pf.phaseU, v/P+pf.phaseV
	px := 1 / P
	switch pf.kind {
	case PatternStripes:
		return float32(sq(fv, 0.5, px)), 0
	case PatternVStripes:
		return float32(sq(fu, 0.5, px)), 0
	case PatternPinstripe:
		duty := math.Max(0.07, 1.2*px)
		return float32(sq(fu, duty, px)), 0
	case PatternChecks:
		a, b := sq(fu, 0.5, px), sq(fv, 0.5, px)
		return float32(a*(1-b) + b*(1-a)), 0
	case PatternGingham:
		a, b := sq(fu, 0.5, px), sq(fv, 0.5, px)
		return float32((a + b) / 2), 0
	case PatternPlaid:
		// Each axis: a wide dark band, a narrow one, and a thin light line;
		// the weave shows both axes' threads half and half.
		band := func(f float64) (float64, float64) {
			dark := math.Max(sq(f, 0.32, px), sq(f-0.45, 0.08, px)*0.8)
			line := sq(f-0.7, math.Max(0.03, 1.2*px), px)
			return dark * (1 - line), line
		}
		a1, l1 := band(fu)
		a2, l2 := band(fv)
		return float32((a1 + a2) / 2), float32((l1 + l2) / 2)
	case PatternPolkaDots:
		row := math.Floor(fv)
		cu := fu + 0.5*math.Mod(math.Abs(row), 2)
		du, dv := frac(cu)-0.5, frac(fv)-0.5
		d := math.Hypot(du, dv)
		return float32(math.Min(math.Max((0.22-d)/px+0.5, 0), 1)), 0
	case PatternHoundstooth:
		// True houndstooth: a 2/2 twill of 4 dark and 4 light threads in
		// both directions.
		n := 8.0
		i, j := math.Floor(fu*n), math.Floor(fv*n)
		warpDark := math.Mod(math.Mod(i, 8)+8, 8) < 4
		weftDark := math.Mod(math.Mod(j, 8)+8, 8) < 4
		showWarp := math.Mod(math.Mod(i+j, 4)+4, 4) < 2
		if (showWarp && warpDark) || (!showWarp && weftDark) {
			return 1, 0
		}
		return 0, 0
	case PatternFloral:
		ci, cj := math.Floor(fu), math.Floor(fv)
		var petal, centre float64
		for di := -1.0; di <= 1; di++ {
			for dj := -1.0; dj <= 1; dj++ {
				i, j := int64(ci+di), int64(cj+dj)
				ox := float64(i) + 0.25 + 0.5*cellHash(pf.seed, i, j, 1)
				oy := float64(j) + 0.25 + 0.5*cellHash(pf.seed, i, j, 2)
				rot := cellHash(pf.seed, i, j, 3) * 2 * math.Pi
				R := 0.26 + 0.1*cellHash(pf.seed, i, j, 4)
				ddx, ddy := fu-ox, fv-oy
				d := math.Hypot(ddx, ddy)
				if d > R+px {
					continue
				}
				th := math.Atan2(ddy, ddx)
				edge := R * (0.45 + 0.55*math.Abs(math.Cos(2.5*th+rot)))
				petal = math.Max(petal, math.Min(math.Max((edge-d)/px+0.5, 0), 1))
				centre = math.Max(centre, math.Min(math.Max((0.28*R-d)/px+0.5, 0), 1))
			}
		}
		return float32(petal * (1 - centre)), float32(centre)
	case PatternDenim:
		// Right-hand twill lines plus long vertical slubs and soft fading.
		tw := 0.5 + 0.5*math.Sin(2*math.Pi*(fu+fv))
		slub := cellHash(pf.seed, int64(math.Floor(fu*1.5)), int64(math.Floor(fv/4)), 5)
		fade := 0.5 + 0.5*math.Sin(fu*0.11+fv*0.07+pf.phaseU*6)
		return float32(0.09*tw + 0.06*slub + 0.05*fade), 0
	}
	return 0, 0
}
