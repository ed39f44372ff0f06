package pipelinetest

import (
	"context"
	"image"
	"image/draw"
	"testing"

	xdraw "golang.org/x/image/draw"
)

// Crowd is a crowded test photo built from the shared real photos: a
// subject and a neighbour pasted against it, with the neighbour's visible
// pixels known exactly (the shared photos hold only two two-person
// pictures, neither with a person behind or seated against the subject).
type Crowd struct {
	Name string
	// Img is the composite, origin (0,0).
	Img *image.RGBA
	// Neighbour is 255 on the neighbour's visible pixels (the ground
	// truth a bystander change is measured on).
	Neighbour *image.Gray
}

// crowdMaskLevel is the person-mask level from which a pasted pixel is
// the pasted person's.
const crowdMaskLevel = 128

// Crowds builds the three crowded photos: "behind" (the T-pose man of
// codait_man_tpose_cutout, smaller, standing behind the standing man of
// codait_man_standing, his arm behind the subject's), "seated" (the
// seated man of fashn_model cut out by the person mask and sat against
// the standing man's leg and hand) and "astronauts" (astronaut.png twice,
// the right copy overlapping the left one's shoulder: two people in one
// person-mask component).
func Crowds(t testing.TB) []Crowd {
	t.Helper()
	p := Perception(t)
	ctx := context.Background()
	man := Image(t, "images/codait_man_standing.jpg")
	manMask, err := p.PersonMask(ctx, man)
	if err != nil {
		t.Fatal(err)
	}
	behind := image.NewRGBA(man.Bounds())
	draw.Draw(behind, behind.Rect, man, image.Point{}, draw.Src)
	r := image.Rect(150, 120, 480, 463)
	tpose := scaleRGBA(Image(t, "images/codait_man_tpose_cutout.png"), r.Size())
	draw.Draw(behind, r, tpose, image.Point{}, draw.Over)
	draw.DrawMask(behind, behind.Rect, man, image.Point{}, alphaOf(manMask), image.Point{}, draw.Over)
	behindN := image.NewGray(behind.Rect)
	for y := r.Min.Y; y < r.Max.Y && y < behind.Rect.Dy(); y++ {
		for x := r.Min.X; x < r.Max.X && x < behind.Rect.Dx(); x++ {
			if tpose.Pix[(y-r.Min.Y)*tpose.Stride+(x-r.Min.X)*4+3] >= crowdMaskLevel && manMask.Pix[y*manMask.Stride+x] < crowdMaskLevel {
				behindN.Pix[y*behindN.Stride+x] = 255
			}
		}
	}
	seat := Image(t, "images/fashn_model.webp")
	seatMask, err := p.PersonMask(ctx, seat)
	if err != nil {
		t.Fatal(err)
	}
	seated := image.NewRGBA(man.Bounds())
	draw.Draw(seated, seated.Rect, man, image.Point{}, draw.Src)
	sr := image.Rect(170, 264, 450, 684)
	ss := scaleRGBA(seat, sr.Size())
	sm := image.NewGray(image.Rect(0, 0, sr.Dx(), sr.Dy()))
	xdraw.CatmullRom.Scale(sm, sm.Rect, seatMask, seatMask.Rect, xdraw.Src, nil)
	draw.DrawMask(seated, sr, ss, image.Point{}, alphaOf(sm), image.Point{}, draw.Over)
	seatedN := image.NewGray(seated.Rect)
	for y := 0; y < sr.Dy(); y++ {
		for x := 0; x < sr.Dx(); x++ {
			if sm.Pix[y*sm.Stride+x] >= crowdMaskLevel && x+sr.Min.X < seated.Rect.Dx() {
				seatedN.Pix[(y+sr.Min.Y)*seatedN.Stride+x+sr.Min.X] = 255
			}
		}
	}
	return []Crowd{{"behind", behind, behindN}, {"seated", seated, seatedN}, astronauts(t)}
}

// astronauts is astronaut.png twice side by side, the right copy drawn
// over the left one's right shoulder; the neighbour is the left copy's
// person-mask pixels left of the overlap.
func astronauts(t testing.TB) Crowd {
	t.Helper()
	const overlapX = 368
	a := Image(t, "images/astronaut.png")
	m, err := Perception(t).PersonMask(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	w, h := a.Bounds().Dx(), a.Bounds().Dy()
	img := image.NewRGBA(image.Rect(0, 0, overlapX+w, h))
	draw.Draw(img, image.Rect(0, 0, w, h), a, a.Bounds().Min, draw.Src)
	draw.Draw(img, image.Rect(overlapX, 0, overlapX+w, h), a, a.Bounds().Min, draw.Src)
	n := image.NewGray(img.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < overlapX; x++ {
			if m.Pix[y*m.Stride+x] >= crowdMaskLevel {
				n.Pix[y*n.Stride+x] = 255
			}
		}
	}
	return Crowd{"astronauts", img, n}
}

func scaleRGBA(src image.Image, size image.Point) *image.RGBA {
	out := image.NewRGBA(image.Rectangle{Max: size})
	xdraw.CatmullRom.Scale(out, out.Rect, src, src.Bounds(), xdraw.Over, nil)
	return out
}

// alphaOf views a gray mask as an alpha mask (draw.DrawMask reads a
// *image.Gray as opaque everywhere).
func alphaOf(m *image.Gray) *image.Alpha {
	return &image.Alpha{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
}
