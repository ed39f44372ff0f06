package recolour

import (
	"fmt"
	"slices"
	"strings"
)

// Garment regions.
const (
	RegionTop    = "top"    // shirts, tops, jackets: clothes above the waist
	RegionBottom = "bottom" // trousers, skirts, shorts: clothes below the waist
	RegionFull   = "full"   // dresses, jumpsuits, suits: all clothes
)

// Patterns.
const (
	PatternSolid       = "solid"
	PatternStripes     = "stripes"          // horizontal (Breton) stripes
	PatternVStripes    = "vertical-stripes" // vertical stripes
	PatternPinstripe   = "pinstripe"        // thin vertical lines
	PatternChecks      = "checks"           // two-colour check / checkerboard
	PatternGingham     = "gingham"          // even check with a blended overlap tone
	PatternPlaid       = "plaid"            // tartan: several bands of different widths
	PatternPolkaDots   = "polka-dots"
	PatternDenim       = "denim" // diagonal twill with indigo-style fading
	PatternHoundstooth = "houndstooth"
	PatternFloral      = "floral" // scattered five-petal flowers
)

// Garment is one garment the prompt describes.
type Garment struct {
	Region  string  // RegionTop, RegionBottom or RegionFull
	Noun    string  // the garment word of the prompt ("" when it named none)
	Colour  *Colour // main colour; nil keeps the garment's own colour
	Accent  *Colour // second colour of a pattern (stripes, dots, checks)
	Pattern string  // one of the Pattern constants; "" = none
}

// Spec is what Parse understood.
type Spec struct {
	Garments []Garment
}

// String describes the spec for Output.Method and error messages, e.g.
// `region=top (shirt) colour=navy #1f2a44 pattern=stripes accent=white #f4f4f2`.
func (s Spec) String() string {
	var parts []string
	for _, g := range s.Garments {
		parts = append(parts, g.String())
	}
	return strings.Join(parts, "; ")
}

func (g Garment) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "region=%s", g.Region)
	if g.Noun != "" {
		fmt.Fprintf(&b, " (%s)", g.Noun)
	}
	if g.Colour != nil {
		fmt.Fprintf(&b, ", colour=%s #%02x%02x%02x", g.Colour.Name, g.Colour.RGB[0], g.Colour.RGB[1], g.Colour.RGB[2])
	} else {
		b.WriteString(", no colour")
	}
	if g.Pattern != "" {
		fmt.Fprintf(&b, ", pattern=%s", g.Pattern)
	} else {
		b.WriteString(", no pattern")
	}
	if g.Accent != nil {
		fmt.Fprintf(&b, ", accent=%s #%02x%02x%02x", g.Accent.Name, g.Accent.RGB[0], g.Accent.RGB[1], g.Accent.RGB[2])
	}
	return b.String()
}

// ParseError is a prompt Parse could not use; its message says what was
// understood.
type ParseError struct {
	Prompt     string
	Understood Spec
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("prompt-tryon: could not find a colour or pattern in %q; understood %s", e.Prompt, e.Understood)
}

// garmentNouns maps garment words to regions.
var garmentNouns = map[string]string{
	"shirt": RegionTop, "tshirt": RegionTop, "tee": RegionTop, "top": RegionTop, "tops": RegionTop,
	"blouse": RegionTop, "sweater": RegionTop, "jumper": RegionTop, "hoodie": RegionTop,
	"sweatshirt": RegionTop, "jacket": RegionTop, "blazer": RegionTop, "coat": RegionTop,
	"cardigan": RegionTop, "polo": RegionTop, "tank": RegionTop, "vest": RegionTop,
	"turtleneck": RegionTop, "camisole": RegionTop, "cami": RegionTop, "tunic": RegionTop,
	"pullover": RegionTop, "crewneck": RegionTop, "henley": RegionTop, "bomber": RegionTop,
	"parka": RegionTop, "windbreaker": RegionTop, "overshirt": RegionTop, "shirts": RegionTop,
	"knit": RegionTop, "knitwear": RegionTop, "anorak": RegionTop, "gilet": RegionTop,
	"trousers": RegionBottom, "trouser": RegionBottom, "pants": RegionBottom, "jeans": RegionBottom,
	"skirt": RegionBottom, "shorts": RegionBottom, "chinos": RegionBottom, "leggings": RegionBottom,
	"slacks": RegionBottom, "joggers": RegionBottom, "sweatpants": RegionBottom, "culottes": RegionBottom,
	"bottoms": RegionBottom, "bottom": RegionBottom, "cargos": RegionBottom, "trackpants": RegionBottom,
	"dress": RegionFull, "gown": RegionFull, "jumpsuit": RegionFull, "romper": RegionFull,
	"overalls": RegionFull, "dungarees": RegionFull, "suit": RegionFull, "tracksuit": RegionFull,
	"outfit": RegionFull, "clothes": RegionFull, "clothing": RegionFull, "onesie": RegionFull,
	"playsuit": RegionFull, "kaftan": RegionFull, "robe": RegionFull, "everything": RegionFull,
	"boilersuit": RegionFull, "coveralls": RegionFull, "uniform": RegionFull,
	"raincoat": RegionTop, "trench": RegionTop, "puffer": RegionTop, "kimono": RegionTop, "poncho": RegionTop,
	"cape": RegionTop, "shacket": RegionTop, "sweatervest": RegionTop, "bodysuit": RegionTop, "leotard": RegionTop,
	"skort": RegionBottom, "capris": RegionBottom, "jeggings": RegionBottom, "sarong": RegionBottom,
	"sundress": RegionFull, "minidress": RegionFull, "maxi": RegionFull, "pinafore": RegionFull,
}

// patternWords maps pattern words (one or two words) to patterns.
var patternWords = map[string]string{
	"stripes": PatternStripes, "stripe": PatternStripes, "striped": PatternStripes, "stripy": PatternStripes,
	"stripey": PatternStripes, "breton": PatternStripes, "banded": PatternStripes, "rugby": PatternStripes,
	"pinstripe": PatternPinstripe, "pinstripes": PatternPinstripe, "pinstriped": PatternPinstripe,
	"pin stripe": PatternPinstripe, "pin stripes": PatternPinstripe, "pin striped": PatternPinstripe,
	"check": PatternChecks, "checks": PatternChecks, "checked": PatternChecks, "checkered": PatternChecks,
	"chequered": PatternChecks, "checkerboard": PatternChecks, "chequerboard": PatternChecks,
	"plaid": PatternPlaid, "tartan": PatternPlaid, "flannel": PatternPlaid,
	"gingham": PatternGingham,
	"polka":   PatternPolkaDots, "dots": PatternPolkaDots, "dot": PatternPolkaDots, "dotted": PatternPolkaDots,
	"spots": PatternPolkaDots, "spotted": PatternPolkaDots, "spotty": PatternPolkaDots,
	"denim": PatternDenim, "chambray": PatternDenim, "jean": PatternDenim,
	"houndstooth": PatternHoundstooth, "dogtooth": PatternHoundstooth, "hounds tooth": PatternHoundstooth,
	"floral": PatternFloral, "flowers": PatternFloral, "flower": PatternFloral, "flowery": PatternFloral,
	"flowered": PatternFloral, "blossom": PatternFloral, "blossoms": PatternFloral,
	"solid": PatternSolid, "plain": PatternSolid,
}

// tokenize lower-cases the prompt, joins "t-shirt"/"t shirt" into "tshirt"
// and splits on everything that is not a letter.
func tokenize(s string) []string {
	s = strings.ToLower(s)
	s = strings.NewReplacer("t-shirt", "tshirt", "t shirt", "tshirt", "tee-shirt", "tshirt",
		"boiler suit", "boilersuit", "track pants", "trackpants").Replace(s)
	return strings.FieldsFunc(s, func(r rune) bool { return r < 'a' || r > 'z' })
}

// attrs are the colour/pattern words gathered before a garment noun.
type attrs struct {
	colours     []Colour
	pattern     string
	orientation string // "vertical" / "horizontal"
}

func (a *attrs) empty() bool { return len(a.colours) == 0 && a.pattern == "" }

// Parse reads a garment description: garment words give the region (top,
// bottom or full; top when none is named), colour names (see palette, with
// the modifiers light, pale, pastel, soft, dark, deep, rich, bright, vivid,
// neon, electric, muted, dusty, washed, faded) give the colour, pattern
// words the pattern. Adjectives attach to the next garment word; words after
// the last garment word complete it ("a navy shirt with white stripes").
// A prompt with no usable colour or pattern is a *ParseError.
func Parse(prompt string) (Spec, error) {
	ps := &promptParser{toks: tokenize(prompt)}
	for ps.i = 0; ps.i < len(ps.toks); ps.i++ {
		ps.word()
	}
	gs := completeLast(ps.gs, ps.cur)
	if len(gs) == 0 {
		gs = append(gs, Garment{Region: RegionTop})
	}
	spec := Spec{Garments: gs}
	// Keep the garments that ask for a change.
	var use []Garment
	for _, g := range gs {
		if g.Colour != nil || (g.Pattern != "" && g.Pattern != PatternSolid) {
			use = append(use, g)
		}
	}
	if len(use) == 0 {
		return Spec{}, &ParseError{Prompt: prompt, Understood: spec}
	}
	// One garment per region: a later mention of the same region wins, and
	// a full-body garment replaces top and bottom.
	var out []Garment
	for _, g := range use {
		out = slices.DeleteFunc(out, func(o Garment) bool {
			return o.Region == g.Region || g.Region == RegionFull || o.Region == RegionFull
		})
		out = append(out, g)
	}
	return Spec{Garments: out}, nil
}

// promptParser reads a prompt's tokens left to right: colours, modifiers
// and patterns gather in cur until a garment noun takes them.
type promptParser struct {
	toks []string
	i    int // the token being read
	gs   []Garment
	cur  attrs
	mods []string
}

// word reads the token at ps.i (and the next one where a two-word name
// takes it).
func (ps *promptParser) word() {
	t := ps.toks[ps.i]
	two := ""
	if ps.i+1 < len(ps.toks) {
		two = t + " " + ps.toks[ps.i+1]
	}
	if ps.colour(t, two) {
		return
	}
	ps.mods = nil
	if ps.pattern(t, two) {
		return
	}
	if r, ok := garmentNouns[t]; ok {
		g := Garment{Region: r, Noun: t}
		if t == "jeans" && ps.cur.pattern == "" {
			ps.cur.pattern = PatternDenim
		}
		fill(&g, ps.cur)
		ps.gs = append(ps.gs, g)
		ps.cur = attrs{}
	}
}

// colour reads a colour name: two-word names first ("dusty rose", "hot
// pink"), then modifiers, then one word optionally followed by its family
// word ("emerald green"). It says whether the token was one.
func (ps *promptParser) colour(t, two string) bool {
	toks := ps.toks
	if rgb, ok := palette[two]; ok && two != "" {
		ps.cur.colours = append(ps.cur.colours, Colour{Name: nameWith(ps.mods, two), RGB: modify(rgb, ps.mods)})
		ps.mods = nil
		ps.i++
		return true
	}
	if _, ok := modifiers[t]; ok {
		ps.mods = append(ps.mods, t)
		return true
	}
	rgb, ok := palette[t]
	if !ok || t == "denim" && ps.i+1 < len(toks) && garmentNouns[toks[ps.i+1]] != "" {
		return false
	}
	if ps.i+1 < len(toks) && basicColours[toks[ps.i+1]] && toks[ps.i+1] != t {
		if _, isPair := palette[two]; !isPair {
			ps.i++ // "navy blue" -> navy
		}
	}
	ps.cur.colours = append(ps.cur.colours, Colour{Name: nameWith(ps.mods, t), RGB: modify(rgb, ps.mods)})
	ps.mods = nil
	if len(ps.cur.colours) == 2 && ps.i >= 2 && toks[ps.i-1] == "on" {
		// "red on white": the first colour is the motif, the second the
		// ground.
		ps.cur.colours[0], ps.cur.colours[1] = ps.cur.colours[1], ps.cur.colours[0]
	}
	if t == "denim" && ps.cur.pattern == "" {
		ps.cur.pattern = PatternDenim
	}
	return true
}

// pattern reads a pattern word (two-word ones first) or an orientation,
// and says whether the token was one.
func (ps *promptParser) pattern(t, two string) bool {
	if p, ok := patternWords[two]; ok && two != "" {
		ps.cur.pattern = p
		ps.i++
		return true
	}
	if p, ok := patternWords[t]; ok {
		if !(p == PatternSolid && ps.cur.pattern != "") {
			ps.cur.pattern = p
		}
		return true
	}
	switch t {
	case "vertical", "vertically":
		ps.cur.orientation = "vertical"
		return true
	case "horizontal", "horizontally":
		ps.cur.orientation = "horizontal"
		return true
	}
	return false
}

// completeLast lets trailing words (cur) complete the last garment: a
// missing colour or pattern, or the pattern's accent ("... with white
// stripes"); with no garment named they make a top.
func completeLast(gs []Garment, cur attrs) []Garment {
	if cur.empty() && cur.orientation == "" {
		return gs
	}
	if len(gs) == 0 {
		gs = append(gs, Garment{Region: RegionTop})
	}
	last := &gs[len(gs)-1]
	if last.Colour == nil && len(cur.colours) > 0 {
		fill(last, attrs{colours: cur.colours, pattern: orPattern(last.Pattern, cur.pattern), orientation: cur.orientation})
		return gs
	}
	if last.Pattern == "" || last.Pattern == PatternSolid {
		last.Pattern = orient(orPattern(last.Pattern, cur.pattern), cur.orientation)
	} else if cur.orientation != "" {
		last.Pattern = orient(last.Pattern, cur.orientation)
	}
	if len(cur.colours) > 0 && last.Accent == nil {
		last.Accent = &cur.colours[0]
	}
	return gs
}

func nameWith(mods []string, name string) string {
	if len(mods) == 0 {
		return name
	}
	return strings.Join(mods, " ") + " " + name
}

func orPattern(a, b string) string {
	if b != "" {
		return b
	}
	return a
}

// orient turns stripes vertical or horizontal.
func orient(p, o string) string {
	switch {
	case p == PatternStripes && o == "vertical":
		return PatternVStripes
	case p == PatternVStripes && o == "horizontal":
		return PatternStripes
	}
	return p
}

// groundFirst patterns read "<colour> <pattern>" as the cloth's colour
// with a contrasting motif ("red plaid", "emerald polka dot", "charcoal
// pinstripe", "blush floral", "black denim"); the others read it as the
// motif's colour on the garment's own ground ("red gingham", "navy
// stripes").
var groundFirst = map[string]bool{
	PatternPinstripe: true, PatternPolkaDots: true, PatternPlaid: true, PatternFloral: true, PatternDenim: true,
}

// fill moves attributes onto a garment: two colours are the ground and the
// motif; one colour with a pattern follows groundFirst.
func fill(g *Garment, a attrs) {
	g.Pattern = orient(a.pattern, a.orientation)
	switch {
	case len(a.colours) >= 2:
		g.Colour, g.Accent = &a.colours[0], &a.colours[1]
	case len(a.colours) == 1 && g.Pattern != "" && g.Pattern != PatternSolid && !groundFirst[g.Pattern]:
		g.Accent = &a.colours[0]
	case len(a.colours) == 1:
		g.Colour = &a.colours[0]
	}
}
