// Package selfcheck measures a pipeline's own result: how much changed
// outside the subject, whether the subject's face is unchanged and still
// detected, and whether the output has holes (black regions that were not
// in the input). Each measurement is a pipelines.Check with a documented
// limit (docs/API.md, "Self-checks"). It is a capability package: it never
// imports a model pipeline.
package selfcheck

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"

	xdraw "golang.org/x/image/draw"
)

// Check names.
const (
	NameChangedOutside = "changed_outside_subject"
	NameFaceChange     = "face_region_change"
	NameFaceFound      = "face_similarity"
	NameHole           = "largest_hole"
	NameTear           = "largest_tear"
	NameTornHole       = "largest_torn_hole"
	NameBgHole         = "largest_background_hole"
	NameHairChange     = "hair_changed"
)

// Limits of the checks.
const (
	// MaxChangedOutside is the largest share of the pixels outside the
	// subject's region and blend band that may differ from the input.
	MaxChangedOutside = 0.01
	// ChangeTol is the per-channel difference (0..255) from which a pixel
	// counts as changed.
	ChangeTol = 8
	// MaxFaceChange is the largest share of the subject's face box (sides
	// and forehead trimmed, down to the chin) that edits which must not
	// touch the face (garments, colours) may change.
	MaxFaceChange = 0.03
	// MaxHairChange is the largest share of the subject's hair that a
	// garment edit may change. prompt-tryon's clean outputs of the six
	// sheet photos and the three crowds read 0-0.0098 (the garment's
	// feathered edge where hair lies on it); "a red top" painting the
	// backlit hair over the side half-body's shoulder read 0.0967.
	MaxHairChange = 0.03
	// MinFaceIoU is the smallest intersection-over-union between the
	// input's subject face and the best face detected on the output.
	MinFaceIoU = 0.5
	// MaxHoleFrac is the largest hole allowed, as a fraction of the output
	// image (0.2%: about 2000 pixels at 1 MP).
	MaxHoleFrac = 0.002
	// HoleLevel: a pixel whose channels are all at most this level is
	// black (a hole candidate) when the input was not black there.
	HoleLevel = 12
	// MaxTearFrac is the largest torn region (Tear) allowed, as a fraction
	// of the output image (0.1%). Measured on pose-control's outputs of
	// the shared photos, every text pose, all looked at (issue 21): the
	// clean ones (head turns, codait_man_standing "weight on one leg")
	// read 0-0.0005; a white wedge torn under the arm (fashn_garment "hand
	// in pocket" 0.0016), a forearm torn from its hand ("leaning" 0.0021),
	// the torso torn at the armpits (fashn_model's arm poses 0.0034) read
	// more. Until then the limit was 0.5% and let those wedges pass.
	MaxTearFrac = 0.001
	// TearOpenFrac is the opening radius, as a fraction of the image
	// diagonal, that removes thin slivers from a Tear region.
	TearOpenFrac = 0.005
	// MaxTornHoleFrac is the largest torn hole (TornHole) allowed, as a
	// fraction of the output image (2%). Measured on 18 pose-control
	// outputs (codait_man_standing, fashn_model, fashn_garment, the bikes
	// and phones photos; text and template poses): 16 at most 1.14%, the background uncovered between a moved arm
	// and the torso where the arm used to hang (hands on hips, a template's
	// bent arm); the torso torn open on pexels_two_women_phones is 3.11%
	// ("arms out") and 4.18% ("arms raised").
	MaxTornHoleFrac = 0.02
	// TornCloseFrac is the closing radius, as a fraction of the image
	// diagonal, that makes a re-rendered person's silhouette for Tear
	// (gaps narrower than about twice this are inside the body).
	TornCloseFrac = 0.02
	// MaxBgHoleFrac is the largest background-coloured hole (BgHole)
	// allowed inside a re-rendered person, as a fraction of the output
	// image (2%). Measured on the classical angle views of eight test
	// photos (48 views): 45 at most 0.47%, three 1.07-1.45% (the plate's
	// smooth fill between the legs where a narrowed leg uncovers where the
	// other stood: visible smears, but a usable picture); a torn torso or
	// an arm torn off is larger.
	MaxBgHoleFrac = 0.02
	// BgHoleTol is the per-channel difference (0..255) within which an
	// output pixel counts as the background plate's colour.
	BgHoleTol = 10
	// faceSideInset and faceTopInset trim the face box for FaceChange.
	faceSideInset = 0.15
	faceTopInset  = 0.1
)

// ChangedOutside measures the share of pixels outside alpha (alpha 0: not
// the subject nor its blend band) that out changed from orig.
func ChangedOutside(orig, out image.Image, alpha *image.Gray) pipelines.Check {
	return pipelines.MaxCheck(NameChangedOutside, round4(body.ChangedOutside(orig, out, alpha, ChangeTol)), MaxChangedOutside)
}

// HairChange measures the share of the subject's hair (hair on, >= 128)
// that out changed from orig by more than ChangeTol in a channel: a
// garment edit leaves the hair alone. No hair: 0.
func HairChange(orig, out image.Image, hair *image.Gray) pipelines.Check {
	notHair := image.NewGray(hair.Rect)
	for i, v := range hair.Pix {
		if v < 128 {
			notHair.Pix[i] = 255
		}
	}
	return pipelines.MaxCheck(NameHairChange, round4(body.ChangedOutside(orig, out, notHair, ChangeTol)), MaxHairChange)
}

// FaceChange measures the share of the face box's pixels (sides and
// forehead trimmed, down to the chin) that out changed from orig by more
// than ChangeTol in a channel.
func FaceChange(orig, out image.Image, f perception.Face) pipelines.Check {
	o, e := raster.RGBA(orig), raster.RGBA(out)
	r := innerBox(f, o.Rect)
	if o.Rect.Size() != e.Rect.Size() || r.Empty() {
		return pipelines.MaxCheck(NameFaceChange, 1, MaxFaceChange)
	}
	changed := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			i := y*o.Stride + x*4
			for c := 0; c < 3; c++ {
				if math.Abs(float64(o.Pix[i+c])-float64(e.Pix[i+c])) > ChangeTol {
					changed++
					break
				}
			}
		}
	}
	return pipelines.MaxCheck(NameFaceChange, round4(float64(changed)/float64(r.Dx()*r.Dy())), MaxFaceChange)
}

// FaceFound re-detects faces on out and measures the best
// intersection-over-union with the input face f (0 when none is found).
func FaceFound(ctx context.Context, p perception.Perception, out image.Image, f perception.Face) (pipelines.Check, error) {
	faces, err := p.Faces(ctx, out)
	if err != nil {
		return pipelines.Check{}, fmt.Errorf("selfcheck: faces: %w", err)
	}
	best := 0.0
	for _, g := range faces {
		best = math.Max(best, iou(f.Box, g.Box))
	}
	return pipelines.MinCheck(NameFaceFound, round4(best), MinFaceIoU), nil
}

// Hole measures the largest 4-connected region of black pixels in out that
// were not black in orig (orig is resampled to out's size when they
// differ), as a fraction of out's pixels.
func Hole(orig, out image.Image) pipelines.Check {
	e := raster.RGBA(out)
	o := raster.RGBA(orig)
	if o.Rect.Size() != e.Rect.Size() {
		r := image.NewRGBA(e.Rect)
		xdraw.NearestNeighbor.Scale(r, r.Rect, o, o.Rect, xdraw.Src, nil)
		o = r
	}
	return pipelines.MaxCheck(NameHole, round4(LargestHole(o, e)), MaxHoleFrac)
}

// Tear measures the largest torn region of an output that re-rendered a
// person over an inpainted background plate: a connected region where the
// person used to be (was: the input's person mask, 255 on), the
// re-rendered person (person: its coverage) no longer is, and yet it lies
// inside the re-rendered silhouette closed by TornCloseFrac of the image
// diagonal: background-coloured plate showing through a gap in the body
// (an arm torn from the shoulder, a wedge in the torso) rather than
// background beside it. Slivers thinner than twice TearOpenFrac of the
// diagonal (a thin gap between an arm and the torso) are opened away. The
// masks have out's size. Gaps wider than the closing are TornHole's.
func Tear(out image.Image, was, person *image.Gray) pipelines.Check {
	b := out.Bounds()
	if was.Rect.Size() != b.Size() || person.Rect.Size() != b.Size() {
		return pipelines.MaxCheck(NameTear, 1, MaxTearFrac)
	}
	closed := mask.Close(mask.Binary(person, 128), TornCloseFrac*diagonal(b))
	return pipelines.MaxCheck(NameTear, round4(largestFrac(torn(was, person, closed))), MaxTearFrac)
}

// TornHole measures the largest torn hole of a re-rendered person, however
// wide: a connected region where the person used to be (was, 255 on) and
// the re-rendered person (person: its coverage) no longer is, enclosed by
// the re-rendered silhouette (closed by TornCloseFrac of the diagonal,
// then its holes filled): the plate showing through a torso torn open
// whose gap is too wide for Tear's closing to bridge. Slivers thinner than
// twice TearOpenFrac of the diagonal are opened away. A hole that opens to
// the image's edge is not enclosed and not measured here. The masks have
// the same size; otherwise the check fails with value 1.
func TornHole(was, person *image.Gray) pipelines.Check {
	if was.Rect.Size() != person.Rect.Size() {
		return pipelines.MaxCheck(NameTornHole, 1, MaxTornHoleFrac)
	}
	inside := mask.FillHoles(mask.Close(mask.Binary(person, 128), TornCloseFrac*diagonal(person.Rect)))
	return pipelines.MaxCheck(NameTornHole, round4(largestFrac(torn(was, person, inside))), MaxTornHoleFrac)
}

// torn marks (255) the pixels where the person was and no longer is that
// lie inside (255 on), opened by TearOpenFrac of the diagonal. The three
// masks have the same size.
func torn(was, person, inside *image.Gray) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, person.Rect.Dx(), person.Rect.Dy()))
	for i := range g.Pix {
		if was.Pix[i] >= 128 && person.Pix[i] < 128 && inside.Pix[i] >= 128 {
			g.Pix[i] = 255
		}
	}
	return mask.Open(g, TearOpenFrac*diagonal(g.Rect))
}

// diagonal is r's diagonal in pixels.
func diagonal(r image.Rectangle) float64 { return math.Hypot(float64(r.Dx()), float64(r.Dy())) }

// BgHole measures the largest background-coloured hole of an output that
// re-rendered a person over a background plate: a connected region where
// the person stood in the input and the re-rendered person does not
// (uncovered, 255 on, at out's geometry), inside the re-rendered person's
// silhouette (person, closed by TornCloseFrac of the diagonal), whose
// colour is the plate's there (every channel within BgHoleTol): the plate
// fill showing through the body. Slivers thinner than twice TearOpenFrac
// of the diagonal are opened away. A generative stage that repainted the
// region no longer shows the plate there, so its output passes where the
// classical one fails. All images have out's size; otherwise the check
// fails with value 1.
func BgHole(out, plate image.Image, uncovered, person *image.Gray) pipelines.Check {
	e, pl := raster.RGBA(out), raster.RGBA(plate)
	b := e.Rect
	if pl.Rect.Size() != b.Size() || uncovered.Rect.Size() != b.Size() || person.Rect.Size() != b.Size() {
		return pipelines.MaxCheck(NameBgHole, 1, MaxBgHoleFrac)
	}
	diag := math.Hypot(float64(b.Dx()), float64(b.Dy()))
	closed := mask.Close(mask.Binary(person, 128), TornCloseFrac*diag)
	g := image.NewGray(b)
	for i := range g.Pix {
		if uncovered.Pix[i] >= 128 && person.Pix[i] < 128 && closed.Pix[i] >= 128 && near(e.Pix[4*i:], pl.Pix[4*i:], BgHoleTol) {
			g.Pix[i] = 255
		}
	}
	g = mask.Open(g, TearOpenFrac*diag)
	return pipelines.MaxCheck(NameBgHole, round4(largestFrac(g)), MaxBgHoleFrac)
}

// near reports whether two RGB(A) pixels differ by at most tol in every
// colour channel.
func near(p, q []uint8, tol int) bool {
	for c := range 3 {
		if d := int(p[c]) - int(q[c]); d > tol || d < -tol {
			return false
		}
	}
	return true
}

// LargestHole is the area fraction of the largest new black region (see
// Hole); orig and out have the same size.
func LargestHole(orig, out *image.RGBA) float64 { return largestFrac(newBlack(orig, out)) }

// newBlack marks (255) the pixels black in out and not in orig.
func newBlack(orig, out *image.RGBA) *image.Gray {
	w, h := out.Rect.Dx(), out.Rect.Dy()
	g := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if black(out.Pix[y*out.Stride+x*4:]) && !black(orig.Pix[y*orig.Stride+x*4:]) {
				g.Pix[y*w+x] = 255
			}
		}
	}
	return g
}

// largestFrac is the area fraction of g's largest 4-connected region.
func largestFrac(g *image.Gray) float64 {
	_, sizes := mask.Components(g)
	largest := 0
	for _, s := range sizes[1:] {
		largest = max(largest, s)
	}
	return float64(largest) / float64(g.Rect.Dx()*g.Rect.Dy())
}

func black(p []uint8) bool { return p[0] <= HoleLevel && p[1] <= HoleLevel && p[2] <= HoleLevel }

// innerBox is the face box less faceSideInset of its width at each side
// (hair, background) and faceTopInset of its height at the top, down to
// the chin, inside bounds.
func innerBox(f perception.Face, bounds image.Rectangle) image.Rectangle {
	w, h := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	return image.Rect(int(f.Box[0]+faceSideInset*w), int(f.Box[1]+faceTopInset*h), int(f.Box[2]-faceSideInset*w), int(f.Box[3])).Intersect(bounds)
}

func iou(a, b [4]float64) float64 {
	ix := math.Max(0, math.Min(a[2], b[2])-math.Max(a[0], b[0]))
	iy := math.Max(0, math.Min(a[3], b[3])-math.Max(a[1], b[1]))
	in := ix * iy
	u := (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - in
	if u <= 0 {
		return 0
	}
	return in / u
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
