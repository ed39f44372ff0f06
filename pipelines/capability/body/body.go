// Package body is the one person analysis of the pipelines: it finds every
// person in a photo (faces from the face detector, connected components of
// the person mask, a component several faces share or claim split between
// them by each face's pose-model claim: instance.go),
// chooses the subject by a documented rule, and gives the pipelines the
// subject's own region, a crop to work on and the compositing that keeps
// everything outside that region pixel-identical. It is a capability
// package: it imports the perception models and the mask primitives, never a
// model pipeline.
//
// Subject rule: the person with the largest visible face confirmed as a
// person's (Person.Assumed, Person.Unposed: a large dog's head competes
// only when no face is confirmed); faces whose area is
// within FaceTieFrac of the largest are tied and the one whose centre is
// nearest the image centre wins. Without any face, the largest person-mask
// component wins (ties likewise broken by centrality).
package body

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"math"
	"sort"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Tuning constants of the analysis.
const (
	// MaskThreshold is the person-mask value (0..255) from which a pixel
	// counts as person.
	MaskThreshold = 128
	// MinFaceScore is the detector score from which a face counts.
	MinFaceScore = 0.6
	// MinFaceFrac is the smallest face width, as a fraction of the image's
	// shorter side, that counts as a visible face (smaller ones are crowd
	// in the far background).
	MinFaceFrac = 0.02
	// MinPersonFrac is the smallest person-mask component, as a fraction of
	// the image, that counts as a person without a face.
	MinPersonFrac = 0.005
	// FaceTieFrac: faces whose area is within this fraction of the largest
	// face's area are tied for subject.
	FaceTieFrac = 0.05
	// BandFrac is the width of the blend band around the subject's region,
	// as a fraction of the image diagonal (at least MinBandPx pixels).
	BandFrac = 0.008
	// MinBandPx is the smallest blend band in pixels.
	MinBandPx = 3
	// CropMarginFrac is the margin added around the subject's region for
	// the working crop, as a fraction of the region's larger side.
	CropMarginFrac = 0.12
	// attachMaxFrac: a faceless component smaller than this fraction of a
	// face person's region, lying inside that person's box grown by
	// attachGrowFrac of its larger side, is a part of that person (a foot
	// or hand the person mask cut off), not another person.
	attachMaxFrac  = 0.25
	attachGrowFrac = 0.1
	// headroomFaces is how far above a face's top, in face heights, the
	// face's person may still claim pixels of a shared component at full
	// strength (hair, a hat).
	headroomFaces = 0.6
	// abovePenalty weighs pixels above a face's headroom when a shared
	// component is split (they belong to someone standing behind).
	abovePenalty = 2.0
	// bodyWidthFaces and bodyHeightFaces size the body box assumed below a
	// face that the person mask missed, in face widths and heights.
	bodyWidthFaces  = 1.6
	bodyHeightFaces = 7.0
)

// ErrNoPerson says that neither a face nor a person-sized mask component was
// found.
var ErrNoPerson = errors.New("no person found")

// Person is one person in the photo.
type Person struct {
	// Face is the person's detected face; nil when no face was seen (a
	// person from the back, or a face too small or hidden).
	Face *perception.Face
	// Region is the person's own pixels (255 on, 0 off), image-sized.
	Region *image.Gray
	// Box is the bounding box of Region.
	Box image.Rectangle
	// Area is the number of pixels in Region.
	Area int
	// Assumed is true when the person mask holds nothing under the face
	// and Region is an assumed body below it (assumedBody): a face the
	// segmentation missed, or the face of something that is not a person
	// (a printed face). Unposed is true when, in a photo of several faces,
	// the pose model run around this face found no person whose head lies
	// on it (a large dog's head held against a woman's: the segmentation
	// takes the dog for a person). Either way the person is the subject
	// only when no other face is free of both.
	Assumed, Unposed bool
}

// FaceArea is the area of the person's face box (0 without a face).
func (p *Person) FaceArea() float64 {
	if p.Face == nil {
		return 0
	}
	b := p.Face.Box
	return (b[2] - b[0]) * (b[3] - b[1])
}

// Analysis is every person in one photo and the chosen subject.
type Analysis struct {
	W, H int
	// Faces are the faces that count (score and size), largest first.
	Faces []perception.Face
	// People are every person found; Subject indexes the chosen one.
	People  []Person
	Subject int
	// Rule says in words why the subject was chosen.
	Rule string
	// MaskCover is the fraction of the image the person mask covers.
	MaskCover float64
}

// SubjectPerson returns the chosen subject.
func (a *Analysis) SubjectPerson() *Person { return &a.People[a.Subject] }

// Band is the blend band width in pixels.
func (a *Analysis) Band() float64 {
	return math.Max(MinBandPx, BandFrac*math.Hypot(float64(a.W), float64(a.H)))
}

// Analyze finds the people in img and chooses the subject. It fails with
// ErrNoPerson (wrapped, with the figures) only when no face is detected and
// no person-sized mask component exists; a detected face always yields a
// person.
func Analyze(ctx context.Context, p perception.Perception, img image.Image) (*Analysis, error) {
	rgba := raster.RGBA(img)
	w, h := rgba.Rect.Dx(), rgba.Rect.Dy()
	faces, err := p.Faces(ctx, rgba)
	if err != nil {
		return nil, fmt.Errorf("body: faces: %w", err)
	}
	pm, err := p.PersonMask(ctx, rgba)
	if err != nil {
		return nil, fmt.Errorf("body: person mask: %w", err)
	}
	bin := mask.Binary(pm, MaskThreshold)
	vis := visibleFaces(faces, w, h)
	var cl []*claim
	if len(vis) > 1 {
		all := make([]int, len(vis))
		for i := range all {
			all[i] = i
		}
		if cl, err = claims(ctx, p, rgba, vis, all); err != nil {
			return nil, err
		}
	}
	return fromClaims(w, h, faces, bin, cl)
}

// fromPerception builds the analysis from detected faces and a binary
// person mask (both at w x h).
func fromPerception(w, h int, faces []perception.Face, pm *image.Gray) (*Analysis, error) {
	return fromClaims(w, h, faces, pm, nil)
}

// fromClaims is fromPerception with each visible face's claim (claims,
// indexed like visibleFaces(faces); nil: none) splitting the components
// several faces share or claim (claimants).
func fromClaims(w, h int, faces []perception.Face, pm *image.Gray, claims []*claim) (*Analysis, error) {
	a := &Analysis{W: w, H: h, Faces: visibleFaces(faces, w, h)}
	a.MaskCover = float64(mask.Count(pm)) / float64(w*h)
	lab, sizes := mask.Components(pm)
	owners := faceOwners(a.Faces, lab, w, h)
	regions := make([]*image.Gray, len(a.Faces))
	var faceless []*image.Gray
	for l := 1; l < len(sizes); l++ {
		fs := claimants(owners[int32(l)], lab, int32(l), sizes[l], a.Faces, claims)
		switch {
		case len(fs) == 0 && float64(sizes[l]) >= MinPersonFrac*float64(w*h):
			faceless = append(faceless, componentMask(lab, int32(l), w, h))
		case len(fs) == 1:
			regions[fs[0]] = orMask(regions[fs[0]], componentMask(lab, int32(l), w, h))
		case len(fs) > 1:
			splitClaimed(lab, int32(l), w, h, a.Faces, fs, claims, regions)
		}
	}
	assumed := make([]bool, len(a.Faces))
	for i := range a.Faces {
		if regions[i] == nil || mask.Count(regions[i]) == 0 {
			regions[i], assumed[i] = assumedBody(a.Faces[i], w, h), true
		}
	}
	for _, r := range faceless {
		if i := partOf(r, regions); i >= 0 {
			orMask(regions[i], r)
			continue
		}
		a.People = append(a.People, Person{Region: r})
	}
	for i := range a.Faces {
		f := a.Faces[i]
		a.People = append(a.People, Person{Face: &f, Region: regions[i], Assumed: assumed[i], Unposed: claims != nil && claims[i] == nil})
	}
	if len(a.People) == 0 {
		return nil, fmt.Errorf("%w: no face detected and the person mask covers %.1f%% of the image", ErrNoPerson, 100*a.MaskCover)
	}
	for i := range a.People {
		a.People[i].Box = mask.BBox(a.People[i].Region)
		a.People[i].Area = mask.Count(a.People[i].Region)
	}
	a.Subject, a.Rule = chooseSubject(a.People, w, h)
	return a, nil
}

// visibleFaces keeps faces with a score of at least MinFaceScore and a width
// of at least MinFaceFrac of the shorter side, largest first.
func visibleFaces(faces []perception.Face, w, h int) []perception.Face {
	minW := MinFaceFrac * float64(min(w, h))
	var out []perception.Face
	for _, f := range faces {
		if f.Score >= MinFaceScore && f.Box[2]-f.Box[0] >= minW {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return faceArea(out[i]) > faceArea(out[j]) })
	return out
}

func faceArea(f perception.Face) float64 { return (f.Box[2] - f.Box[0]) * (f.Box[3] - f.Box[1]) }

func faceCentre(f perception.Face) (float64, float64) {
	return (f.Box[0] + f.Box[2]) / 2, (f.Box[1] + f.Box[3]) / 2
}

// faceOwners maps each mask component to the faces it holds: the component
// label most common inside the face box's central half.
func faceOwners(faces []perception.Face, lab []int32, w, h int) map[int32][]int {
	owners := map[int32][]int{}
	for i, f := range faces {
		counts := map[int32]int{}
		bw, bh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
		x0, x1 := clampInt(int(f.Box[0]+bw/4), 0, w-1), clampInt(int(f.Box[2]-bw/4), 0, w-1)
		y0, y1 := clampInt(int(f.Box[1]+bh/4), 0, h-1), clampInt(int(f.Box[3]-bh/4), 0, h-1)
		for y := y0; y <= y1; y++ {
			for x := x0; x <= x1; x++ {
				if l := lab[y*w+x]; l != 0 {
					counts[l]++
				}
			}
		}
		best, n := int32(0), 0
		for l, c := range counts {
			if c > n || c == n && l < best {
				best, n = l, c
			}
		}
		if best != 0 {
			owners[best] = append(owners[best], i)
		}
	}
	return owners
}

// splitComponent gives each pixel of component l to the face (among fs)
// with the lowest cost: the horizontal distance to the face centre in face
// widths, plus abovePenalty per face height above the face's headroom.
func splitComponent(lab []int32, l int32, w, h int, faces []perception.Face, fs []int, regions []*image.Gray) {
	for _, i := range fs {
		if regions[i] == nil {
			regions[i] = image.NewGray(image.Rect(0, 0, w, h))
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if lab[y*w+x] != l {
				continue
			}
			best, bc := fs[0], math.Inf(1)
			for _, i := range fs {
				if c := splitCost(faces[i], float64(x), float64(y)); c < bc {
					best, bc = i, c
				}
			}
			regions[best].Pix[y*w+x] = 255
		}
	}
}

func splitCost(f perception.Face, x, y float64) float64 {
	cx, _ := faceCentre(f)
	fw, fh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	c := math.Abs(x-cx) / fw
	if top := f.Box[1] - headroomFaces*fh; y < top {
		c += abovePenalty * (top - y) / fh
	}
	return c
}

// partOf returns the face person (index into regions) that the faceless
// region r is a part of (see attachMaxFrac): the one whose region is
// nearest to r (a piece cut off a neighbour's arm stays the neighbour's,
// however much larger the subject is); -1 for none.
func partOf(r *image.Gray, regions []*image.Gray) int {
	rb, ra := mask.BBox(r), mask.Count(r)
	best, bestD := -1, math.Inf(1)
	for i, g := range regions {
		gb, ga := mask.BBox(g), mask.Count(g)
		grown := gb.Inset(-int(attachGrowFrac * float64(max(gb.Dx(), gb.Dy()))))
		if ra >= int(attachMaxFrac*float64(ga)) || !rb.Overlaps(grown) {
			continue
		}
		if d := nearest(r, g); d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// nearest is the smallest squared distance from an on-pixel of r to an
// on-pixel of g.
func nearest(r, g *image.Gray) float64 {
	d := mask.SqDist(g.Rect.Dx(), g.Rect.Dy(), func(i int) bool { return g.Pix[i] >= MaskThreshold })
	best := math.Inf(1)
	for i, v := range r.Pix {
		if v >= MaskThreshold {
			best = math.Min(best, d[i])
		}
	}
	return best
}

// assumedBody is the region of a face the person mask missed: the face box
// and a body box below it.
func assumedBody(f perception.Face, w, h int) *image.Gray {
	cx, _ := faceCentre(f)
	fw, fh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	r := image.Rect(int(cx-bodyWidthFaces*fw), int(f.Box[1]-headroomFaces*fh), int(cx+bodyWidthFaces*fw), int(f.Box[3]+bodyHeightFaces*fh))
	g := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(g, r.Intersect(g.Rect), image.White, image.Point{}, draw.Src)
	return g
}

// confirmed reports whether the person's face is a person's by every
// measure taken (not Assumed, not Unposed).
func (p *Person) confirmed() bool { return !p.Assumed && !p.Unposed }

// chooseSubject applies the subject rule (package doc).
func chooseSubject(people []Person, w, h int) (int, string) {
	anyFace, anyOnMask, anyUnposed := false, false, false
	for i := range people {
		anyFace = anyFace || people[i].Face != nil
		anyOnMask = anyOnMask || people[i].Face != nil && people[i].confirmed()
		anyUnposed = anyUnposed || people[i].Unposed
	}
	size := func(p *Person) float64 { return p.FaceArea() }
	what := "largest visible face"
	switch {
	case anyFace && !anyOnMask && anyUnposed:
		// No pose confirms any face (a photo cut at the chest): the
		// detector's confidence, not the size, tells a person's face
		// from a dog's head.
		size = func(p *Person) float64 {
			if p.Face == nil {
				return 0
			}
			return p.Face.Score
		}
		what = "most confident face (no face confirmed by the pose model)"
	case !anyFace:
		size = func(p *Person) float64 { return float64(p.Area) }
		what = "largest person (no face visible)"
	}
	top := 0.0
	for i := range people {
		if !anyOnMask || people[i].confirmed() {
			top = math.Max(top, size(&people[i]))
		}
	}
	best, bestD := -1, math.Inf(1)
	tied := 0
	for i := range people {
		if size(&people[i]) < (1-FaceTieFrac)*top {
			continue
		}
		if anyOnMask && !people[i].confirmed() {
			continue
		}
		tied++
		if d := centreDist(&people[i], w, h); d < bestD {
			best, bestD = i, d
		}
	}
	rule := fmt.Sprintf("%s (of %d people)", what, len(people))
	if tied > 1 {
		rule = fmt.Sprintf("%s, most central of %d tied (of %d people)", what, tied, len(people))
	}
	return best, rule
}

// centreDist is the distance of a person's face centre (else region centre)
// from the image centre.
func centreDist(p *Person, w, h int) float64 {
	var x, y float64
	if p.Face != nil {
		x, y = faceCentre(*p.Face)
	} else {
		x, y = float64(p.Box.Min.X+p.Box.Max.X)/2, float64(p.Box.Min.Y+p.Box.Max.Y)/2
	}
	return math.Hypot(x-float64(w)/2, y-float64(h)/2)
}

func componentMask(lab []int32, l int32, w, h int) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range lab {
		if v == l {
			g.Pix[i] = 255
		}
	}
	return g
}

func orMask(a, b *image.Gray) *image.Gray {
	if a == nil {
		return b
	}
	for i, v := range b.Pix {
		a.Pix[i] = max(a.Pix[i], v)
	}
	return a
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

// NotOnePersonError is OnePerson's answer for a photo that does not hold
// exactly one person with a visible face; Why says what was found.
type NotOnePersonError struct{ Why string }

func (e *NotOnePersonError) Error() string { return e.Why }

// OnePerson checks that img holds exactly one person with a visible face
// (a generated model photo must, before a garment or a face goes on it).
// Other errors are the analysis's own.
func OnePerson(ctx context.Context, p perception.Perception, img image.Image) error {
	a, err := Analyze(ctx, p, img)
	switch {
	case errors.Is(err, ErrNoPerson):
		return &NotOnePersonError{"no person found in it"}
	case err != nil:
		return err
	case len(a.Faces) == 0:
		return &NotOnePersonError{"no face found in it"}
	case len(a.People) > 1:
		return &NotOnePersonError{fmt.Sprintf("%d people in it", len(a.People))}
	}
	return nil
}
