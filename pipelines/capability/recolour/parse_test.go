package recolour

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	type g struct{ region, colour, accent, pattern string }
	cases := []struct {
		prompt string
		want   []g
	}{
		{"burgundy t-shirt", []g{{RegionTop, "burgundy", "", ""}}},
		{"Navy shirt with white horizontal stripes", []g{{RegionTop, "navy", "white", PatternStripes}}},
		{"vertical striped trousers in olive", []g{{RegionBottom, "", "olive", PatternVStripes}}},
		{"light blue top", []g{{RegionTop, "light blue", "", ""}}},
		{"blue jeans and a mustard tee", []g{{RegionBottom, "blue", "", PatternDenim}, {RegionTop, "mustard", "", ""}}},
		{"a red dress", []g{{RegionFull, "red", "", ""}}},
		{"charcoal pinstripe suit", []g{{RegionFull, "charcoal", "", PatternPinstripe}}},
		{"emerald green polka dot dress", []g{{RegionFull, "emerald", "", PatternPolkaDots}}},
		{"a red plaid flannel shirt", []g{{RegionTop, "red", "", PatternPlaid}}},
		{"denim jacket", []g{{RegionTop, "", "", PatternDenim}}},
		{"black denim jacket", []g{{RegionTop, "black", "", PatternDenim}}},
		{"jeans", []g{{RegionBottom, "", "", PatternDenim}}},
		{"dusty rose blouse", []g{{RegionTop, "dusty rose", "", ""}}},
		{"houndstooth skirt", []g{{RegionBottom, "", "", PatternHoundstooth}}},
		{"cream gingham blouse", []g{{RegionTop, "", "cream", PatternGingham}}},
		{"striped shirt in navy and white", []g{{RegionTop, "navy", "white", PatternStripes}}},
		{"make it teal", []g{{RegionTop, "teal", "", ""}}},
		{"deep purple hoodie, dark grey chinos", []g{{RegionTop, "deep purple", "", ""}, {RegionBottom, "dark grey", "", ""}}},
		{"a terracotta jumpsuit with cream flowers", []g{{RegionFull, "terracotta", "cream", PatternFloral}}},
		{"sage top, then a lavender top", []g{{RegionTop, "lavender", "", ""}}},
		{"chartreuse shorts", []g{{RegionBottom, "chartreuse", "", ""}}},
		{"polka-dot blouse, red on white", []g{{RegionTop, "white", "red", PatternPolkaDots}}},
		{"baby pink raincoat", []g{{RegionTop, "baby pink", "", ""}}},
		{"a black jean jacket", []g{{RegionTop, "black", "", PatternDenim}}},
		{"red tank top", []g{{RegionTop, "red", "", ""}}},
		{"make the shirt forest green", []g{{RegionTop, "forest green", "", ""}}},
	}
	for _, c := range cases {
		spec, err := Parse(c.prompt)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.prompt, err)
			continue
		}
		var got []g
		for _, x := range spec.Garments {
			e := g{region: x.Region, pattern: x.Pattern}
			if x.Colour != nil {
				e.colour = x.Colour.Name
			}
			if x.Accent != nil {
				e.accent = x.Accent.Name
			}
			got = append(got, e)
		}
		if len(got) != len(c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.prompt, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Parse(%q) = %v, want %v", c.prompt, got, c.want)
				break
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"make it nice":              `prompt-tryon: could not find a colour or pattern in "make it nice"; understood region=top, no colour, no pattern`,
		"a t-shirt":                 `prompt-tryon: could not find a colour or pattern in "a t-shirt"; understood region=top (tshirt), no colour, no pattern`,
		"":                          `prompt-tryon: could not find a colour or pattern in ""; understood region=top, no colour, no pattern`,
		"nice trousers and a shirt": `prompt-tryon: could not find a colour or pattern in "nice trousers and a shirt"; understood region=bottom (trousers), no colour, no pattern; region=top (shirt), no colour, no pattern`,
	}
	for prompt, want := range cases {
		_, err := Parse(prompt)
		var pe *ParseError
		if !errors.As(err, &pe) || err.Error() != want {
			t.Errorf("Parse(%q) err = %v\nwant %s", prompt, err, want)
		}
	}
}

func TestPaletteAndModifiers(t *testing.T) {
	if len(palette) < 60 {
		t.Fatalf("palette has %d colours, want >= 60", len(palette))
	}
	for _, name := range []string{"burgundy", "navy", "olive", "camel", "ivory", "emerald", "blush", "mustard", "teal",
		"charcoal", "sage", "terracotta", "lavender", "coral", "cobalt", "chartreuse"} {
		if _, ok := palette[name]; !ok {
			t.Errorf("palette lacks %s", name)
		}
	}
	lightness := func(p string) float64 {
		s, err := Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		l, _, _ := rgbToLab(s.Garments[0].Colour.RGB)
		return l
	}
	for _, c := range []struct{ lighter, darker string }{
		{"light blue shirt", "blue shirt"}, {"blue shirt", "dark blue shirt"}, {"pale pink shirt", "pink shirt"},
		{"green shirt", "deep green shirt"}, {"pastel yellow shirt", "mustard shirt"},
	} {
		if a, b := lightness(c.lighter), lightness(c.darker); a < b+5 {
			t.Errorf("%q L*=%.0f should be lighter than %q L*=%.0f", c.lighter, a, c.darker, b)
		}
	}
	// Modifiers keep the hue (within 12 degrees) and stay in gamut.
	for name, rgb := range palette {
		_, a0, b0 := rgbToLab(rgb)
		if a0*a0+b0*b0 < 15*15 {
			continue
		}
		for m := range modifiers {
			c := modify(rgb, []string{m})
			_, a1, b1 := rgbToLab(c)
			if d := hueDiff(hueDeg(a0, b0), hueDeg(a1, b1)); d > 12 && a1*a1+b1*b1 > 10*10 {
				t.Errorf("%s %s: hue moved %.0f degrees", m, name, d)
			}
		}
	}
}

func hueDiff(a, b float64) float64 {
	d := a - b
	for d > 180 {
		d -= 360
	}
	for d < -180 {
		d += 360
	}
	if d < 0 {
		return -d
	}
	return d
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"burgundy t-shirt", "navy shirt with white stripes", "make it nice", "",
		"light light dark blue", "t-shirt t-shirt", "striped", "denim denim jeans", "ÄÖ navy\x00 top", "red and and and"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := Parse(s)
		spec2, err2 := Parse(s)
		if (err == nil) != (err2 == nil) || spec.String() != spec2.String() {
			t.Fatalf("Parse(%q) not deterministic", s)
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "prompt-tryon: could not find a colour or pattern") {
				t.Fatalf("Parse(%q): unexpected error %v", s, err)
			}
			return
		}
		if len(spec.Garments) == 0 || len(spec.Garments) > 3 {
			t.Fatalf("Parse(%q): %d garments", s, len(spec.Garments))
		}
		seen := map[string]bool{}
		for _, g := range spec.Garments {
			if g.Region != RegionTop && g.Region != RegionBottom && g.Region != RegionFull {
				t.Fatalf("Parse(%q): region %q", s, g.Region)
			}
			if seen[g.Region] || (g.Region == RegionFull && len(spec.Garments) > 1) {
				t.Fatalf("Parse(%q): overlapping regions %s", s, spec)
			}
			seen[g.Region] = true
			if g.Colour == nil && (g.Pattern == "" || g.Pattern == PatternSolid) {
				t.Fatalf("Parse(%q): garment without change %s", s, g)
			}
		}
	})
}
