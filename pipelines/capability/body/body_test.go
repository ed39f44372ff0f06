package body_test

import (
	"context"
	"errors"
	"image"
	"image/color"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines/capability/body"
)

// overlay tints the subject's region red and other people blue.
func overlay(img image.Image, a *body.Analysis) image.Image {
	out := image.NewRGBA(image.Rect(0, 0, a.W, a.H))
	for y := 0; y < a.H; y++ {
		for x := 0; x < a.W; x++ {
			r, g, b, _ := img.At(x+img.Bounds().Min.X, y+img.Bounds().Min.Y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
			for i, p := range a.People {
				if p.Region.Pix[y*a.W+x] >= 128 {
					if i == a.Subject {
						c.R = uint8((int(c.R) + 255) / 2)
					} else {
						c.B = uint8((int(c.B) + 255) / 2)
					}
				}
			}
			out.SetRGBA(x, y, c)
		}
	}
	return out
}

// TestAnalyzePhotos runs the analysis on real photos: the subject is the
// person with the largest visible face (its face centre's x range is given
// from the photo), and the number of people found is as in the photo.
func TestAnalyzePhotos(t *testing.T) {
	p := pipelinetest.Perception(t)
	tests := []struct {
		name           string
		people         int
		faceX0, faceX1 float64 // the subject's face centre lies in this x range
	}{
		{"pixabay_two_women_bikes.jpg", 2, 700, 800},   // the woman in white, right
		{"pexels_two_women_phones.jpg", 2, 2200, 2800}, // the woman in front
		{"fashn_model.webp", 1, 400, 560},              // boots attached to the man
		{"astronaut.png", 1, 150, 300},
		{"pexels_woman_side_halfbody.png", 1, 130, 290},
	}
	for _, tc := range tests {
		img := pipelinetest.Image(t, "images/"+tc.name)
		a, err := body.Analyze(context.Background(), p, img)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s := a.SubjectPerson()
		testenv.WritePNG(t, "body_"+tc.name+".png", overlay(img, a))
		if len(a.People) != tc.people {
			t.Errorf("%s: %d people, want %d", tc.name, len(a.People), tc.people)
		}
		if s.Face == nil {
			t.Fatalf("%s: subject without a face", tc.name)
		}
		largest := 0.0
		for _, f := range a.Faces {
			largest = max(largest, (f.Box[2]-f.Box[0])*(f.Box[3]-f.Box[1]))
		}
		if s.FaceArea() != largest {
			t.Errorf("%s: subject face area %.0f, largest face %.0f", tc.name, s.FaceArea(), largest)
		}
		if cx := (s.Face.Box[0] + s.Face.Box[2]) / 2; cx < tc.faceX0 || cx > tc.faceX1 {
			t.Errorf("%s: subject face centre x %.0f, want %.0f..%.0f (rule %q)", tc.name, cx, tc.faceX0, tc.faceX1, a.Rule)
		}
		if !s.Box.Overlaps(image.Rect(int(s.Face.Box[0]), int(s.Face.Box[1]), int(s.Face.Box[2]), int(s.Face.Box[3]))) {
			t.Errorf("%s: subject region %v misses its face", tc.name, s.Box)
		}
	}
}

func TestOnePerson(t *testing.T) {
	p := pipelinetest.Perception(t)
	flat := image.NewRGBA(image.Rect(0, 0, 320, 240))
	for i := range flat.Pix {
		flat.Pix[i] = uint8(i * 7)
	}
	cases := []struct {
		name string
		img  image.Image
		want string // "" = one person
	}{
		{"standing man", pipelinetest.Image(t, "images/codait_man_standing.jpg"), ""},
		{"two women", pipelinetest.Image(t, "images/pixabay_two_women_bikes.jpg"), "2 people in it"},
		{"no person", flat, "no person found in it"},
	}
	for _, c := range cases {
		err := body.OnePerson(context.Background(), p, c.img)
		var np *body.NotOnePersonError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.As(err, &np) || np.Why != c.want):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
