package pipelinetest

import (
	"context"
	"image"
	"image/color"
	"math"
	"sort"
	"testing"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Faceless-photo tuning.
const (
	// headGrowFrac grows the detected face box, in face widths, to the
	// head that is painted over (ears, jaw, the hairline).
	headGrowFrac = 0.28
	// hairLevel is the parsing's hair probability (0..255) from which a
	// pixel is sampled for the hair colour.
	hairLevel = 128
	// strandPeriod is the vertical strand period of the painted hair, in
	// face widths (a little texture so the fill reads as hair, not a hole).
	strandPeriod = 0.09
	// bandFrac grows the person mask to Faceless.Band, in image diagonals.
	bandFrac = 0.03
)

// Faceless is a real photo whose person shows no face, built honestly
// from a shared photo (the shared test data hold nobody seen from behind).
type Faceless struct {
	Name string
	// Img is the photo, origin (0,0).
	Img *image.RGBA
	// Head is 255 on the pixels that were painted over.
	Head *image.Gray
	// Person is 255 on the person mask of the original photo; Band is it
	// grown by bandFrac of the image diagonal (a garment edit's blend
	// band and the garment's own outline may reach that far).
	Person, Band *image.Gray
}

// FromBehind builds "a man seen from behind" from codait_man_standing.jpg:
// his whole head (the face box grown by headGrowFrac plus the hair and
// skin parsing around it, within the person mask) painted in his own hair
// colour with vertical strands, so the head reads as the back of a head;
// his body is still the front view (the silhouette of a standing person is
// the same from either side). The face detector finds no face on it (the
// test that uses it asserts so).
func FromBehind(t testing.TB) Faceless {
	t.Helper()
	p := Perception(t)
	ctx := context.Background()
	src := Image(t, "images/codait_man_standing.jpg")
	img := raster.CopyRGBA(src)
	faces, err := p.Faces(ctx, img)
	if err != nil || len(faces) == 0 {
		t.Fatalf("pipelinetest: FromBehind: no face on codait_man_standing.jpg to paint over (err %v)", err)
	}
	parse, err := p.Parse(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := p.PersonMask(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	head := headRegion(faces[0], parse, pm)
	paintHair(img, head, hairColour(img, parse.Hair, head), faces[0].Box[2]-faces[0].Box[0])
	person := mask.Binary(pm, 128)
	band := mask.Dilate(person, bandFrac*math.Hypot(float64(img.Rect.Dx()), float64(img.Rect.Dy())))
	return Faceless{Name: "man from behind", Img: img, Head: head, Person: person, Band: band}
}

// headRegion is an ellipse around the face box (grown by headGrowFrac of
// the face width, raised to the hairline) and the person-mask pixels of
// the hair parsing inside that ellipse grown by half: the whole head, the
// neck below the chin kept.
func headRegion(f perception.Face, parse *perception.Parsing, pm *image.Gray) *image.Gray {
	w, h := pm.Rect.Dx(), pm.Rect.Dy()
	fw, fh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	cx, cy := (f.Box[0]+f.Box[2])/2, (f.Box[1]+f.Box[3])/2-0.15*fh
	rx, ry := (0.5+headGrowFrac)*fw, (0.5+headGrowFrac)*fh
	out := image.NewGray(pm.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
			d := dx*dx + dy*dy
			i := y*w + x
			hair := pm.Pix[i] >= 128 && parse.Hair.Pix[i] >= hairLevel && d <= 2.25
			if d <= 1 || hair {
				out.Pix[i] = 255
			}
		}
	}
	return out
}

// hairColour is the median colour of the hair-parsed pixels near the head
// (a dark brown when the parsing finds none).
func hairColour(img *image.RGBA, hair, head *image.Gray) color.RGBA {
	var rs, gs, bs []int
	b := mask.BBox(head)
	b = b.Inset(-b.Dx() / 4).Intersect(img.Rect)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if hair.Pix[y*hair.Stride+x] >= hairLevel {
				i := y*img.Stride + 4*x
				rs, gs, bs = append(rs, int(img.Pix[i])), append(gs, int(img.Pix[i+1])), append(bs, int(img.Pix[i+2]))
			}
		}
	}
	if len(rs) < 20 {
		return color.RGBA{45, 32, 24, 255}
	}
	med := func(v []int) uint8 { sort.Ints(v); return uint8(v[len(v)/2]) }
	return color.RGBA{med(rs), med(gs), med(bs), 255}
}

// paintHair fills head with c, darkened and lightened in vertical strands
// and shaded towards the head's edge.
func paintHair(img *image.RGBA, head *image.Gray, c color.RGBA, faceW float64) {
	b := mask.BBox(head)
	cx, cy := float64(b.Min.X+b.Max.X)/2, float64(b.Min.Y+b.Max.Y)/2
	rx, ry := math.Max(1, float64(b.Dx())/2), math.Max(1, float64(b.Dy())/2)
	period := math.Max(2, strandPeriod*faceW)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if head.Pix[y*head.Stride+x] < 128 {
				continue
			}
			dx, dy := (float64(x)-cx)/rx, (float64(y)-cy)/ry
			k := 1 + 0.12*math.Sin(2*math.Pi*float64(x)/period+0.3*float64(y)/period) - 0.25*math.Min(1, dx*dx+dy*dy)
			i := y*img.Stride + 4*x
			img.Pix[i] = clamp8(float64(c.R) * k)
			img.Pix[i+1] = clamp8(float64(c.G) * k)
			img.Pix[i+2] = clamp8(float64(c.B) * k)
			img.Pix[i+3] = 255
		}
	}
}

func clamp8(v float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(v)))) }
