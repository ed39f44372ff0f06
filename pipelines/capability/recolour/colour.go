package recolour

import (
	"fashiond/pipelines/capability/raster"
	"math"
)

// Colour is a named garment colour.
type Colour struct {
	Name string   // as understood, with modifiers: "light blue", "burgundy"
	RGB  [3]uint8 // sRGB
}

// palette maps colour names (one or two words) to sRGB. Fashion names are
// given the colour of a typical dyed fabric, not the most saturated screen
// colour of the same name.
var palette = map[string][3]uint8{
	"black": {0x1c, 0x1c, 0x1e}, "jet black": {0x14, 0x14, 0x16}, "white": {0xf4, 0xf4, 0xf2},
	"off white": {0xf1, 0xee, 0xe4}, "ivory": {0xf2, 0xec, 0xd8}, "cream": {0xf0, 0xe6, 0xcc},
	"bone": {0xe3, 0xda, 0xc9}, "ecru": {0xcd, 0xbe, 0x9a}, "beige": {0xd9, 0xc8, 0xa9},
	"oatmeal": {0xd5, 0xc7, 0xad}, "sand": {0xc8, 0xb2, 0x8a}, "khaki": {0xc3, 0xb0, 0x91},
	"camel": {0xc1, 0x9a, 0x6b}, "tan": {0xd2, 0xb4, 0x8c}, "taupe": {0x8b, 0x7d, 0x6b},
	"stone": {0x92, 0x8e, 0x85}, "grey": {0x8c, 0x8c, 0x8c}, "gray": {0x8c, 0x8c, 0x8c},
	"silver": {0xc0, 0xc0, 0xc0}, "charcoal": {0x36, 0x45, 0x4f}, "slate": {0x70, 0x80, 0x90},
	"brown": {0x6b, 0x42, 0x26}, "chocolate": {0x4e, 0x2a, 0x1e}, "coffee": {0x6f, 0x4e, 0x37},
	"mocha": {0x96, 0x78, 0x5e}, "rust": {0xb7, 0x41, 0x0e}, "terracotta": {0xe2, 0x72, 0x5b},
	"burnt orange": {0xcc, 0x55, 0x00}, "orange": {0xf2, 0x8c, 0x28}, "tangerine": {0xf2, 0x85, 0x00},
	"peach": {0xff, 0xcb, 0xa4}, "apricot": {0xfb, 0xce, 0xb1}, "coral": {0xff, 0x7f, 0x50},
	"salmon": {0xfa, 0x80, 0x72}, "red": {0xc8, 0x10, 0x2e}, "scarlet": {0xff, 0x24, 0x00},
	"crimson": {0xdc, 0x14, 0x3c}, "cherry": {0xd2, 0x04, 0x2d}, "tomato": {0xff, 0x63, 0x47},
	"burgundy": {0x80, 0x00, 0x20}, "maroon": {0x80, 0x00, 0x00}, "wine": {0x72, 0x2f, 0x37},
	"oxblood": {0x4a, 0x04, 0x04}, "pink": {0xf4, 0xa6, 0xc0}, "hot pink": {0xff, 0x69, 0xb4},
	"fuchsia": {0xe0, 0x21, 0x8a}, "magenta": {0xca, 0x1f, 0x7b}, "blush": {0xe8, 0xb4, 0xb8},
	"rose": {0xe3, 0x8a, 0x9c}, "dusty rose": {0xc9, 0x8d, 0x8d}, "mauve": {0xb7, 0x84, 0xa7},
	"lilac": {0xc8, 0xa2, 0xc8}, "lavender": {0xb5, 0x9e, 0xd8}, "purple": {0x6a, 0x0d, 0xad},
	"violet": {0x7f, 0x3f, 0xbf}, "plum": {0x8e, 0x45, 0x85}, "aubergine": {0x47, 0x2c, 0x4c},
	"eggplant": {0x47, 0x2c, 0x4c}, "indigo": {0x3f, 0x2a, 0x7a}, "navy": {0x1f, 0x2a, 0x44},
	"blue": {0x1f, 0x5f, 0xc8}, "royal blue": {0x41, 0x69, 0xe1}, "cobalt": {0x00, 0x47, 0xab},
	"sky blue": {0x87, 0xce, 0xeb}, "baby pink": {0xf4, 0xc2, 0xc2}, "baby blue": {0x89, 0xcf, 0xf0}, "powder blue": {0xb0, 0xe0, 0xe6},
	"cerulean": {0x00, 0x7b, 0xa7}, "periwinkle": {0x8e, 0x9a, 0xe8}, "steel blue": {0x46, 0x82, 0xb4},
	"denim": {0x3b, 0x5b, 0x8c}, "teal": {0x00, 0x80, 0x80}, "turquoise": {0x40, 0xe0, 0xd0},
	"aqua": {0x00, 0xc2, 0xc7}, "mint": {0xaa, 0xf0, 0xd1}, "sage": {0x9c, 0xaf, 0x88},
	"olive": {0x70, 0x82, 0x38}, "emerald": {0x00, 0x9b, 0x77}, "green": {0x2e, 0x8b, 0x3f},
	"forest green": {0x22, 0x6b, 0x2a}, "hunter green": {0x35, 0x5e, 0x3b}, "bottle green": {0x00, 0x6a, 0x4e},
	"kelly green": {0x4c, 0xbb, 0x17}, "lime": {0x7c, 0xcd, 0x32}, "chartreuse": {0xb5, 0xd3, 0x00},
	"mustard": {0xe1, 0xad, 0x01}, "yellow": {0xf5, 0xd0, 0x00}, "lemon": {0xff, 0xf4, 0x4f},
	"gold": {0xd4, 0xaf, 0x37}, "ochre": {0xcc, 0x77, 0x22}, "nude": {0xe3, 0xbc, 0x9a},
}

// basicColours are the family words that may follow a specific name
// ("navy blue", "emerald green") without changing it.
var basicColours = map[string]bool{
	"red": true, "blue": true, "green": true, "yellow": true, "pink": true, "purple": true,
	"orange": true, "brown": true, "grey": true, "gray": true, "white": true, "black": true,
}

// modifier adjusts a colour in LCh: lightness moves toward L by the
// fraction t, chroma is multiplied by kC.
type modifier struct {
	L, t, kC float64
}

var modifiers = map[string]modifier{
	"light": {86, 0.6, 0.6}, "pale": {90, 0.7, 0.45}, "pastel": {85, 0.65, 0.45}, "soft": {75, 0.3, 0.7},
	"dark": {18, 0.45, 0.85}, "deep": {22, 0.35, 1.1}, "rich": {30, 0.2, 1.15},
	"bright": {65, 0.2, 1.35}, "vivid": {60, 0.1, 1.4}, "neon": {75, 0.3, 1.6}, "electric": {60, 0.15, 1.5},
	"muted": {50, 0.1, 0.55}, "dusty": {60, 0.15, 0.5}, "washed": {75, 0.3, 0.6}, "faded": {75, 0.35, 0.6},
}

// --- sRGB / linear / Lab --------------------------------------------------

var lin8 = raster.SRGBTable()

// D65 white.
const xn, yn, zn = 0.95047, 1.0, 1.08883

func labF(t float64) float64 {
	if t > 216.0/24389 {
		return math.Cbrt(t)
	}
	return (24389.0/27*t + 16) / 116
}

func labFInv(t float64) float64 {
	if t3 := t * t * t; t3 > 216.0/24389 {
		return t3
	}
	return (116*t - 16) / (24389.0 / 27)
}

// linToLab converts linear sRGB to CIE Lab (D65).
func linToLab(r, g, b float64) (L, A, B float64) {
	x := 0.4124564*r + 0.3575761*g + 0.1804375*b
	y := 0.2126729*r + 0.7151522*g + 0.0721750*b
	z := 0.0193339*r + 0.1191920*g + 0.9503041*b
	fx, fy, fz := labF(x/xn), labF(y/yn), labF(z/zn)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}

// labToLin converts Lab to linear sRGB (may be out of gamut).
func labToLin(L, A, B float64) (r, g, b float64) {
	fy := (L + 16) / 116
	fx := fy + A/500
	fz := fy - B/200
	x, y, z := xn*labFInv(fx), yn*labFInv(fy), zn*labFInv(fz)
	r = 3.2404542*x - 1.5371385*y - 0.4985314*z
	g = -0.9692660*x + 1.8760108*y + 0.0415560*z
	b = 0.0556434*x - 0.2040259*y + 1.0572252*z
	return
}

// rgbToLab converts 8-bit sRGB to Lab.
func rgbToLab(c [3]uint8) (L, A, B float64) {
	return linToLab(lin8[c[0]], lin8[c[1]], lin8[c[2]])
}

// labToRGB converts Lab to 8-bit sRGB, reducing chroma (keeping L and hue)
// until the colour fits the gamut.
func labToRGB(L, A, B float64) [3]uint8 {
	L = min(max(L, 0), 100)
	k := 1.0
	var r, g, b float64
	for range 30 {
		r, g, b = labToLin(L, A*k, B*k)
		if r >= -1e-4 && g >= -1e-4 && b >= -1e-4 && r <= 1+1e-4 && g <= 1+1e-4 && b <= 1+1e-4 {
			break
		}
		k *= 0.92
	}
	q := func(v float64) uint8 {
		return uint8(math.Round(min(max(raster.LinearToSRGB(min(max(v, 0), 1)), 0), 1) * 255))
	}
	return [3]uint8{q(r), q(g), q(b)}
}

// hueDeg is the LCh hue angle of a Lab colour in degrees 0..360.
func hueDeg(A, B float64) float64 {
	h := math.Atan2(B, A) * 180 / math.Pi
	if h < 0 {
		h += 360
	}
	return h
}

// modify applies modifiers (in order) to a colour in LCh.
func modify(c [3]uint8, mods []string) [3]uint8 {
	if len(mods) == 0 {
		return c
	}
	L, A, B := rgbToLab(c)
	for _, m := range mods {
		mo := modifiers[m]
		L = min(max(L+(mo.L-L)*mo.t, 4), 97)
		A, B = A*mo.kC, B*mo.kC
	}
	return labToRGB(L, A, B)
}
