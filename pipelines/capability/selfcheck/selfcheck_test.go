package selfcheck

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/raster"
)

func grey(w, h int, v uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Rect, image.NewUniform(color.RGBA{v, v, v, 255}), image.Point{}, draw.Src)
	return img
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) *image.RGBA {
	out := image.NewRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	draw.Draw(out, r, image.NewUniform(c), image.Point{}, draw.Src)
	return out
}

// TestChecks: each check passes on an untouched or confined result and
// fails on a result made to break it, with the expected figure.
func TestChecks(t *testing.T) {
	const w, h = 100, 100
	orig := grey(w, h, 128)
	region := image.NewGray(orig.Rect)
	draw.Draw(region, image.Rect(30, 30, 70, 70), image.White, image.Point{}, draw.Src)
	alpha := body.BandAlpha(region, 3)
	f := perception.Face{Box: [4]float64{40, 10, 60, 30}}
	red := color.RGBA{200, 0, 0, 255}
	tests := []struct {
		name  string
		check pipelines.Check
		want  float64
		pass  bool
	}{
		{"changed outside: inside edit passes", ChangedOutside(orig, fill(orig, image.Rect(35, 35, 65, 65), red), alpha), 0, true},
		{"changed outside: a painted neighbour fails", ChangedOutside(orig, fill(orig, image.Rect(0, 0, 20, 100), red), alpha), 0.248, false},
		{"face change: untouched face passes", FaceChange(orig, fill(orig, image.Rect(35, 40, 65, 65), red), f), 0, true},
		{"face change: a garment on the chin fails", FaceChange(orig, fill(orig, image.Rect(0, 26, 100, 100), red), f), 0.2222, false},
		{"hole: a dark input region is no hole", Hole(fill(orig, image.Rect(0, 0, 50, 50), color.RGBA{0, 0, 0, 255}), fill(orig, image.Rect(0, 0, 50, 50), color.RGBA{0, 0, 0, 255})), 0, true},
		{"hole: a new black region fails", Hole(orig, fill(orig, image.Rect(10, 10, 20, 15), color.RGBA{0, 0, 0, 255})), 0.005, false},
		{"hole: sizes differ, orig resampled", Hole(grey(50, 50, 128), fill(orig, image.Rect(0, 0, 4, 4), color.RGBA{5, 5, 5, 255})), 0.0016, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.check.Value != tc.want || tc.check.Pass != tc.pass {
				t.Errorf("%+v, want value %v pass %v", tc.check, tc.want, tc.pass)
			}
			err := pipelines.CheckError("m", []pipelines.Check{tc.check})
			if (err == nil) != tc.pass {
				t.Errorf("CheckError = %v with pass %v", err, tc.pass)
			}
		})
	}
}

// TestFaceFound: the face of a real portrait is found again on the
// untouched image (IoU 1) and not on an image with the face painted out.
func TestFaceFound(t *testing.T) {
	p := pipelinetest.Perception(t)
	img := pipelinetest.Image(t, "images/pexels_woman_portrait.png")
	ctx := context.Background()
	faces, err := p.Faces(ctx, img)
	if err != nil || len(faces) == 0 {
		t.Fatalf("faces: %v %d", err, len(faces))
	}
	c, err := FaceFound(ctx, p, img, faces[0])
	if err != nil || !c.Pass || c.Value < 0.99 {
		t.Errorf("untouched: %+v %v, want IoU 1", c, err)
	}
	b := faces[0].Box
	blank := fill(raster.RGBA(img), image.Rect(int(b[0])-20, int(b[1])-20, int(b[2])+20, int(b[3])+20), color.RGBA{128, 128, 128, 255})
	c, err = FaceFound(ctx, p, blank, faces[0])
	if err != nil || c.Pass {
		t.Errorf("face painted out: %+v %v, want a failure", c, err)
	}
	t.Logf("painted out: %+v", c)
}

func TestCheckErrorMessage(t *testing.T) {
	err := pipelines.CheckError("pose-control", []pipelines.Check{
		pipelines.MaxCheck(NameChangedOutside, 0, MaxChangedOutside),
		pipelines.MaxCheck(NameHole, 0.01, MaxHoleFrac),
	})
	want := "pose-control: self-check largest_hole failed: 0.01 above the limit 0.002"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	err = pipelines.CheckError("tryon", []pipelines.Check{pipelines.MinCheck(NameFaceFound, 0.2, MinFaceIoU)})
	if want := "tryon: self-check face_similarity failed: 0.2 below the limit 0.5"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestTear: a 40x60 person (rows 20..80, columns 30..70) in a 100x100
// output; the re-rendered person either covers the old place, moved its
// arm leaving background beside the body (no tear), or left a gap inside
// its silhouette (a tear of 40x4 = 1.6%, or 4x60 = 2.4%).
func TestTear(t *testing.T) {
	rect := func(rs ...image.Rectangle) *image.Gray {
		g := image.NewGray(image.Rect(0, 0, 100, 100))
		for _, r := range rs {
			draw.Draw(g, r, image.White, image.Point{}, draw.Src)
		}
		return g
	}
	was := rect(image.Rect(30, 20, 70, 80), image.Rect(70, 30, 80, 70)) // body and an arm at its side
	out := grey(100, 100, 128)
	tests := []struct {
		name   string
		person *image.Gray
		want   float64
		pass   bool
	}{
		{"same place", rect(image.Rect(30, 20, 70, 80), image.Rect(70, 30, 80, 70)), 0, true},
		{"arm raised beside", rect(image.Rect(30, 20, 70, 80), image.Rect(70, 0, 80, 20)), 0, true},
		{"small gap in the body", rect(image.Rect(30, 20, 70, 50), image.Rect(30, 54, 70, 80), image.Rect(70, 30, 80, 70)), 0.016, false},
		{"torso split top to bottom", rect(image.Rect(30, 20, 45, 80), image.Rect(49, 20, 70, 80), image.Rect(70, 30, 80, 70)), 0.024, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Tear(out, was, tc.person)
			if c.Name != NameTear || c.Pass != tc.pass || c.Value < tc.want*0.9 || c.Value > tc.want*1.1+1e-9 {
				t.Errorf("Tear = %+v, want value %.4f pass %v", c, tc.want, tc.pass)
			}
		})
	}
	if c := Tear(out, was, image.NewGray(image.Rect(0, 0, 10, 10))); c.Pass {
		t.Errorf("size mismatch passed: %+v", c)
	}
}

// TestBgHole: a 60x60 person (rows 20..80, columns 20..80) in a 100x100
// output over a grey plate. A gap inside the re-rendered silhouette that
// shows the plate is a background-coloured hole (60x4 = 2.4%: fails); the
// same gap repainted in another colour, or plate beside the body, is not.
// A narrower gap (30x4 = 1.2%) is measured but passes.
func TestBgHole(t *testing.T) {
	rect := func(rs ...image.Rectangle) *image.Gray {
		g := image.NewGray(image.Rect(0, 0, 100, 100))
		for _, r := range rs {
			draw.Draw(g, r, image.White, image.Point{}, draw.Src)
		}
		return g
	}
	plate := grey(100, 100, 128)
	gap, small := image.Rect(20, 50, 80, 54), image.Rect(20, 50, 50, 54)
	body := rect(image.Rect(20, 20, 80, 50), image.Rect(20, 54, 80, 80))
	dressed := fill(plate, image.Rect(20, 20, 80, 80), color.RGBA{40, 60, 200, 255})
	tests := []struct {
		name      string
		out       *image.RGBA
		uncovered *image.Gray
		person    *image.Gray
		want      float64
		pass      bool
	}{
		{"no gap", dressed, rect(), rect(image.Rect(20, 20, 80, 80)), 0, true},
		{"plate through a gap", fill(dressed, gap, color.RGBA{132, 125, 128, 255}), rect(gap), body, 0.024, false},
		{"plate through a narrower gap", fill(dressed, small, color.RGBA{128, 128, 128, 255}), rect(small), rect(image.Rect(20, 20, 80, 50), image.Rect(20, 54, 80, 80), image.Rect(50, 50, 80, 54)), 0.012, true},
		{"gap repainted", fill(dressed, gap, color.RGBA{200, 60, 40, 255}), rect(gap), body, 0, true},
		{"black gap is largest_hole's, not this", fill(dressed, gap, color.RGBA{0, 0, 0, 255}), rect(gap), body, 0, true},
		{"plate beside the body", dressed, rect(image.Rect(80, 30, 90, 70)), rect(image.Rect(20, 20, 80, 80)), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := BgHole(tc.out, plate, tc.uncovered, tc.person)
			if c.Name != NameBgHole || c.Pass != tc.pass || c.Value < tc.want*0.9 || c.Value > tc.want*1.1+1e-9 {
				t.Errorf("BgHole = %+v, want value %.4f pass %v", c, tc.want, tc.pass)
			}
		})
	}
	if c := BgHole(dressed, plate, rect(), image.NewGray(image.Rect(0, 0, 10, 10))); c.Pass {
		t.Errorf("size mismatch passed: %+v", c)
	}
}

// TestTornHole: a 40x60 person (rows 20..80, columns 30..70) with an arm
// at its side in a 100x100 image. A hole inside the re-rendered body,
// however wide, is a torn hole; a wide one fails where Tear (which only
// bridges gaps of about 6 px here) sees nothing. Background beside the
// body, a small hole and a notch open to the outside pass.
func TestTornHole(t *testing.T) {
	rect := func(rs ...image.Rectangle) *image.Gray {
		g := image.NewGray(image.Rect(0, 0, 100, 100))
		for _, r := range rs {
			draw.Draw(g, r, image.White, image.Point{}, draw.Src)
		}
		return g
	}
	cut := func(g *image.Gray, r image.Rectangle) *image.Gray {
		draw.Draw(g, r, image.Black, image.Point{}, draw.Src)
		return g
	}
	body, arm := image.Rect(30, 20, 70, 80), image.Rect(70, 30, 80, 70)
	was := rect(body, arm)
	out := grey(100, 100, 128)
	tests := []struct {
		name      string
		person    *image.Gray
		want      float64
		pass      bool
		tearAlone float64 // Tear's value on the same masks
	}{
		{"same place", rect(body, arm), 0, true, 0},
		{"arm raised beside", rect(body, image.Rect(70, 0, 80, 20)), 0, true, 0},
		{"wide hole in the torso", cut(rect(body, arm), image.Rect(40, 35, 60, 65)), 0.06, false, 0},
		{"small hole", cut(rect(body, arm), image.Rect(45, 45, 55, 55)), 0.01, true, 0},
		{"notch open to the side", cut(rect(body), image.Rect(50, 35, 70, 65)), 0, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := TornHole(was, tc.person)
			if c.Name != NameTornHole || c.Pass != tc.pass || c.Value != tc.want {
				t.Errorf("TornHole = %+v, want value %v pass %v", c, tc.want, tc.pass)
			}
			if tr := Tear(out, was, tc.person); tr.Value != 0 {
				t.Errorf("Tear = %+v, want 0", tr)
			}
		})
	}
	if c := TornHole(was, image.NewGray(image.Rect(0, 0, 10, 10))); c.Pass || c.Value != 1 {
		t.Errorf("size mismatch: %+v, want value 1, failed", c)
	}
}

// TestTornHoleRealOutputs measures the masks of two real pose-control
// re-poses (testdata: the input's person mask and the re-posed person's
// coverage at the working size). pexels_two_women_phones, "arms raised":
// the torso torn open, 4.18% of the image, fails, while Tear reads 0.2%
// (the gap is wider than its closing). codait_man_standing, "hands on
// hips": the background uncovered between the arms and the torso where
// the arms hung, 0.99%, passes. Both fail Tear since its limit is 0.1%
// (issue 21: every pose-control output on the shared photos with a tear
// over 0.1% was looked at and shows a wedge of plate torn into the body;
// this codait output is also refused by carried_background).
func TestTornHoleRealOutputs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hole, tear float64
		pass       bool
	}{
		{"phones_arms_raised", 0.0418, 0.002, false},
		{"codait_hands_on_hips", 0.0099, 0.0018, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was, person := grayPNG(t, tc.name+"_was.png"), grayPNG(t, tc.name+"_person.png")
			if c := TornHole(was, person); c.Value != tc.hole || c.Pass != tc.pass {
				t.Errorf("TornHole = %+v, want value %v pass %v", c, tc.hole, tc.pass)
			}
			if c := Tear(person, was, person); c.Value != tc.tear || c.Pass {
				t.Errorf("Tear = %+v, want value %v, failing", c, tc.tear)
			}
		})
	}
}

// grayPNG decodes testdata/name as a grey mask.
func grayPNG(t *testing.T, name string) *image.Gray {
	t.Helper()
	img := pngFile(t, name)
	g := image.NewGray(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
	draw.Draw(g, g.Rect, img, img.Bounds().Min, draw.Src)
	return g
}
