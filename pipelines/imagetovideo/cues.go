package imagetovideo

import (
	"fmt"
	"image"

	"fashiond/pipelines/capability/raster"
)

// Picture cues: the ambient bed is chosen from the prompt's words first;
// without a setting word, from three colour fractions of the background
// plate (the photo with the person removed). They are plain colour
// counts, not a scene classifier: green foliage or grass says outdoors in
// nature; blue sky over light sand says a beach; anything else keeps the
// studio room tone. A street cannot be told from colours and is chosen
// only from the prompt.
const (
	// cueSide: the plate is reduced to at most this many pixels a side.
	cueSide = 128
	// minGreenCue: the share of the plate that must be foliage/grass green
	// for the nature bed.
	minGreenCue = 0.3
	// minSkyCue and minSandCue: the shares of the plate's top part that
	// must be blue sky and of its bottom half that must be light sand for
	// the beach bed.
	minSkyCue  = 0.15
	minSandCue = 0.25
	// greenLead: a green pixel's green channel leads red and blue by
	// this many levels.
	greenLead = 6
	// skyTop: the sky is looked for in this top share of the plate.
	skyTop = 0.4
)

// Cues are the colour fractions of a background plate.
type Cues struct {
	// Green is the share of the plate whose green channel leads red and blue
	// by greenLead levels (foliage, grass).
	Green float64
	// Sky is the share of the plate's top 40% that is blue sky (blue leads
	// red by 25 levels and green by 5, brightness at least 110).
	Sky float64
	// Sand is the share of the plate's bottom half that is light sand
	// (red >= green >= blue, red at least 150, red - blue 20..100).
	Sand float64
}

// PictureCues measures the cues of a background plate.
func PictureCues(plate image.Image) Cues {
	b := plate.Bounds()
	w, h := b.Dx(), b.Dy()
	if s := max(w, h); s > cueSide {
		w, h = max(1, w*cueSide/s), max(1, h*cueSide/s)
	}
	img := raster.Resize(plate, w, h)
	var c Cues
	var top, bottom int
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*img.Stride + x*4
			r, g, bl := int(img.Pix[i]), int(img.Pix[i+1]), int(img.Pix[i+2])
			if g >= r+greenLead && g >= bl+greenLead {
				c.Green++
			}
			if float64(y) < skyTop*float64(h) {
				top++
				if bl >= r+25 && bl >= g+5 && (r+g+bl)/3 >= 110 {
					c.Sky++
				}
			}
			if y >= h/2 {
				bottom++
				if r >= g && g >= bl && r >= 150 && r-bl >= 20 && r-bl <= 100 {
					c.Sand++
				}
			}
		}
	}
	c.Green /= float64(w * h)
	c.Sky /= float64(max(1, top))
	c.Sand /= float64(max(1, bottom))
	return c
}

// ChooseBedFor picks the bed from the prompt's words (ChooseBed) and,
// when the prompt names no setting, from the picture's cues; it says
// which and why.
func ChooseBedFor(prompt string, c Cues) (Bed, string) {
	if bed, phrase := matchBed(prompt); phrase != "" {
		return bed, fmt.Sprintf("chosen from the prompt's word %q", phrase)
	}
	seen := fmt.Sprintf("green %.0f%% of the background, blue sky %.0f%% of its top, light sand %.0f%% of its bottom half", 100*c.Green, 100*c.Sky, 100*c.Sand)
	switch {
	case c.Green >= minGreenCue:
		return BedNature, "the prompt names no setting; chosen from the picture's colours (" + seen + "): outdoors, foliage or grass"
	case c.Sky >= minSkyCue && c.Sand >= minSandCue:
		return BedBeach, "the prompt names no setting; chosen from the picture's colours (" + seen + "): sky over sand"
	}
	return BedStudio, "neither the prompt nor the picture's colours (" + seen + ") name a setting; a street cannot be told from colours, only from the prompt"
}
