// Package style applies the twelve photographic looks of the interface
// spec's styleId to an image: white balance, exposure, on-camera flash,
// studio backdrops (with a person mask), local tone mapping, tone curves,
// saturation and vibrance, split toning, bloom and halation, chromatic
// aberration, unsharp-mask sharpening, seeded film grain and vignetting.
//
// Everything is classical image processing on float32 planes; a style is a
// table of parameters (see looks). Apply is deterministic for a given image,
// style, seed and mask.
//
// Pipelines style a photo of people through AnalyzeScene and ApplyScene:
// the backdrop rule (scene.go) decides whether a studio backdrop may
// replace the background (one standing person whose cut-out holds), and
// the styled output carries its self-checks (person_painted_over,
// face_similarity).
package style

import (
	"fmt"
	"image"
	"strings"

	"fashiond/pipelines/capability/raster"
	"fashiond/spec"
)

// IDs lists the styleIds in the order of the interface spec.
var IDs = spec.StyleIDs

// Options tune one application.
type Options struct {
	// Seed drives the grain and sensor noise; the same seed gives the same
	// result.
	Seed int64
	// PersonMask (optional, 255 = person) enables the subject-aware parts:
	// the studio and minimalist backdrops, and the flash falloff and shadow.
	// Any size; it is resampled to the image.
	PersonMask *image.Gray
	// NoBackdrop keeps the background of a backdrop look (the backdrop
	// rule of AnalyzeScene refused it); the mask still drives the flash.
	NoBackdrop bool
}

// Valid reports whether id is one of IDs.
func Valid(id string) bool {
	_, ok := looks[id]
	return ok
}

// Describe returns a one-line description of a style ("" for unknown ids).
func Describe(id string) string {
	if l, ok := looks[id]; ok {
		return l.desc
	}
	return ""
}

// Apply returns img in the given style as a new image with origin (0,0).
func Apply(img image.Image, id string, o Options) (*image.RGBA, error) {
	l, err := lookFor(id, img)
	if err != nil {
		return nil, err
	}
	out, _ := l.apply(raster.CopyRGBA(img), o)
	return out, nil
}

// lookFor returns the look of id after checking id and img.
func lookFor(id string, img image.Image) (*look, error) {
	l, ok := looks[id]
	if !ok {
		return nil, fmt.Errorf("style: unknown styleId %q (want one of %s)", id, strings.Join(IDs, ", "))
	}
	if img == nil {
		return nil, fmt.Errorf("style: nil image")
	}
	b := img.Bounds()
	if b.Dx() == 0 || b.Dy() == 0 {
		return nil, fmt.Errorf("style: empty image")
	}
	return l, nil
}

// backdrop describes a seamless paper backdrop that replaces the
// background where the person mask is 0.
type backdrop struct {
	wall, floor [3]float32 // sRGB 0..1 behind the subject and on the floor
	falloff     float32    // darkening of the wall toward the top corners
	keep        float32    // fraction of the (desaturated, brightened) original background kept
	shadow      float32    // soft contact/occlusion shadow strength
}

// look is one style's parameter set. Zero values mean "off".
type look struct {
	desc string

	autoWB   float32 // grey-world white balance strength 0..1
	temp     float32 // + warmer / - cooler
	tint     float32 // + magenta / - green
	exposure float32 // stops
	flash    float32 // on-camera flash strength 0..1
	backdrop *backdrop

	hdr       float32 // local tone compression (smartphone HDR) 0..1
	clarity   float32 // local contrast (large-radius unsharp on luma)
	curve     []pt    // master tone curve applied to R, G and B
	chanCurve [3][]pt // optional per-channel curves after the master
	sat, vib  float32 // saturation multiplier (0 = keep 1), vibrance
	shadowHue float32 // split toning: hue (degrees) and amount for shadows
	shadowAmt float32
	highHue   float32 // and for highlights
	highAmt   float32

	bloom      float32    // highlight glow amount
	bloomThr   float32    // luma threshold
	bloomSigma float32    // blur sigma as a fraction of the diagonal
	bloomTint  [3]float32 // glow colour (0 = white)

	ca           float32 // chromatic aberration: R/B radial offset at the corner, fraction of the diagonal
	sharpen      float32 // unsharp amount
	sharpenSigma float32 // pixels
	grain        float32 // luminance grain std-dev (sRGB units)
	grainSize    int     // grain clump radius in pixels (0/1 = per pixel)
	chromaNoise  float32 // per-channel sensor noise
	vignette     float32 // corner darkening 0..1
	vignetteMid  float32 // normalised radius where it starts
}

var looks = map[string]*look{
	"y2k": {
		desc:     "Y2K digicam: cool magenta cast, punchy saturation, glowing highlights, RGB fringing, crunchy sharpening and a little sensor noise",
		temp:     -0.3,
		tint:     0.3,
		exposure: 0.15,
		curve:    []pt{{0, 0.04}, {0.25, 0.2}, {0.75, 0.84}, {1, 1}},
		sat:      1.3, vib: 0.2,
		shadowHue: 255, shadowAmt: 0.1,
		highHue: 315, highAmt: 0.08,
		bloom: 0.55, bloomThr: 0.55, bloomSigma: 0.02,
		bloomTint:   [3]float32{1, 0.85, 1},
		ca:          0.0025,
		sharpen:     0.7,
		grain:       0.012,
		chromaNoise: 0.018,
		vignette:    0.12, vignetteMid: 0.45,
	},
	"studio": {
		desc:     "Studio: neutral white balance, clean bright exposure, gentle contrast, crisp detail; with a person mask the background becomes a seamless light-grey paper sweep with a soft floor gradient",
		autoWB:   0.7,
		exposure: 0.12,
		backdrop: &backdrop{
			wall:    [3]float32{0.84, 0.835, 0.825},
			floor:   [3]float32{0.78, 0.775, 0.765},
			falloff: 0.22, keep: 0.06, shadow: 0.35,
		},
		curve: []pt{{0, 0}, {0.25, 0.23}, {0.75, 0.79}, {1, 1}},
		sat:   1.05, vib: 0.1,
		clarity: 0.15,
		sharpen: 0.5, sharpenSigma: 1,
	},
	"iphone": {
		desc:     "iPhone: smartphone computational look, lifted shadows and held highlights (local tone mapping), vivid but natural colour, strong fine sharpening, no grain",
		temp:     0.06,
		exposure: 0.1,
		hdr:      0.55,
		clarity:  0.2,
		curve:    []pt{{0, 0}, {0.5, 0.52}, {1, 1}},
		sat:      1.12, vib: 0.3,
		sharpen: 1.0, sharpenSigma: 0.8,
	},
	"professional": {
		desc:     "Professional: corporate commercial finish, neutral-cool balance, controlled highlights, deeper contrast, crisp detail and a subtle vignette",
		autoWB:   0.5,
		temp:     -0.06,
		exposure: -0.05,
		curve:    []pt{{0, 0}, {0.2, 0.16}, {0.5, 0.5}, {0.8, 0.85}, {1, 0.98}},
		sat:      0.95, vib: 0.12,
		clarity: 0.25,
		sharpen: 0.5, sharpenSigma: 1,
		vignette: 0.22, vignetteMid: 0.35,
	},
	"lifestyle": {
		desc:     "Lifestyle: warm golden-hour light, airy exposure, soft lifted blacks, gentle haze glow and fine grain",
		temp:     0.4,
		tint:     0.05,
		exposure: 0.25,
		curve:    []pt{{0, 0.07}, {0.3, 0.33}, {0.7, 0.76}, {1, 0.97}},
		sat:      0.95, vib: 0.15,
		shadowHue: 30, shadowAmt: 0.03,
		highHue: 42, highAmt: 0.09,
		bloom: 0.3, bloomThr: 0.6, bloomSigma: 0.035,
		bloomTint: [3]float32{1, 0.85, 0.6},
		grain:     0.01,
		vignette:  0.12, vignetteMid: 0.45,
	},
	"analog": {
		desc:      "Analog film: warm colour-negative palette, faded blacks and rolled-off highlights, teal shadows, red halation, clumpy luminance-dependent grain, soft vignette",
		temp:      0.22,
		tint:      -0.04,
		curve:     []pt{{0, 0.09}, {0.25, 0.28}, {0.5, 0.53}, {0.8, 0.82}, {1, 0.93}},
		chanCurve: [3][]pt{nil, nil, {{0, 0.04}, {1, 0.97}}},
		sat:       0.86,
		shadowHue: 175, shadowAmt: 0.07,
		highHue: 35, highAmt: 0.07,
		bloom: 0.35, bloomThr: 0.7, bloomSigma: 0.006,
		bloomTint: [3]float32{1, 0.4, 0.2},
		grain:     0.03, grainSize: 2,
		vignette: 0.3, vignetteMid: 0.3,
	},
	"streetwear": {
		desc:  "Streetwear: gritty high contrast with crushed blacks, muted cool-green palette, heavy clarity and sharpening, grain and a strong vignette",
		temp:  -0.12,
		tint:  -0.06,
		curve: []pt{{0, 0}, {0.12, 0.02}, {0.3, 0.2}, {0.7, 0.8}, {1, 1}},
		sat:   0.72, vib: -0.1,
		shadowHue: 200, shadowAmt: 0.08,
		highHue: 50, highAmt: 0.03,
		clarity: 0.5,
		sharpen: 0.8, sharpenSigma: 1,
		grain:    0.035,
		vignette: 0.45, vignetteMid: 0.25,
	},
	"flash": {
		desc:    "Flash: hard on-camera flash, brightly lit subject against a darker falloff, a harsh offset shadow behind the person (with a mask), cool white balance and snappy contrast",
		temp:    -0.12,
		flash:   1,
		curve:   []pt{{0, 0}, {0.2, 0.14}, {0.6, 0.66}, {1, 1}},
		sat:     1.08,
		sharpen: 0.4, sharpenSigma: 1,
		grain: 0.01,
	},
	"movie": {
		desc:     "Movie: cinematic teal-and-orange grade, filmic S-curve with a soft toe, slightly desaturated, fine grain and a dark vignette",
		exposure: -0.15,
		curve:    []pt{{0, 0.03}, {0.2, 0.13}, {0.5, 0.5}, {0.8, 0.87}, {1, 0.97}},
		sat:      0.9, vib: 0.1,
		shadowHue: 190, shadowAmt: 0.16,
		highHue: 30, highAmt: 0.13,
		bloom: 0.12, bloomThr: 0.8, bloomSigma: 0.015,
		grain: 0.02, grainSize: 1,
		vignette: 0.35, vignetteMid: 0.3,
	},
	"minimalist": {
		desc:     "Minimalist: high-key, low-contrast matte finish with a muted palette; with a person mask the background becomes a near-white seamless backdrop",
		autoWB:   0.6,
		temp:     0.03,
		exposure: 0.3,
		backdrop: &backdrop{
			wall:    [3]float32{0.93, 0.92, 0.9},
			floor:   [3]float32{0.9, 0.89, 0.87},
			falloff: 0.06, keep: 0.03, shadow: 0.2,
		},
		curve:   []pt{{0, 0.08}, {0.5, 0.58}, {1, 0.98}},
		sat:     0.7,
		sharpen: 0.2, sharpenSigma: 1,
	},
	"ugc": {
		desc:     "UGC: casual phone snapshot, warm indoor white balance, auto-exposed bright with clipped highlights, over-processed sharpening halos and visible sensor noise",
		temp:     0.2,
		tint:     0.03,
		exposure: 0.25,
		curve:    []pt{{0, 0.02}, {0.5, 0.56}, {0.88, 0.98}, {1, 1}},
		sat:      1.1,
		sharpen:  1.1, sharpenSigma: 1.8,
		grain:       0.02,
		chromaNoise: 0.03,
	},
	"editorial": {
		desc:     "Editorial: magazine finish, matte lifted blacks, restrained cool palette that keeps skin tones, luminous highlights, refined clarity and fine grain",
		temp:     -0.04,
		exposure: 0.05,
		curve:    []pt{{0, 0.06}, {0.15, 0.1}, {0.5, 0.5}, {0.85, 0.9}, {1, 0.97}},
		sat:      0.78, vib: 0.18,
		shadowHue: 220, shadowAmt: 0.07,
		highHue: 45, highAmt: 0.04,
		clarity: 0.2,
		bloom:   0.15, bloomThr: 0.65, bloomSigma: 0.01,
		sharpen: 0.5, sharpenSigma: 1,
		grain:    0.015,
		vignette: 0.2, vignetteMid: 0.35,
	},
}
