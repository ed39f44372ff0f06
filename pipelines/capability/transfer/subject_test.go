package transfer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/selfcheck"
)

// TestSubjectExplain: the transfer's job errors name personImage; a
// Subject rewrites them for its photo, and a "no person found" on a photo
// with a face says the subject was found but its body cannot take a
// garment. Errors that are not job errors, and personImage's own, are
// returned unchanged.
func TestSubjectExplain(t *testing.T) {
	const rule = "the person with the largest visible face"
	withFace := &bodypkg.Analysis{Faces: []perception.Face{{Score: 0.9}}, Rule: rule}
	noFace := &bodypkg.Analysis{Rule: rule}
	plain := errors.New("tryon: pose: out of memory")
	for _, tc := range []struct {
		name      string
		photo     string
		a         *bodypkg.Analysis
		err       error
		want      string
		transient bool
	}{
		{"face guard", "modelImageUrl", withFace,
			pipelines.Failf("personImage: the pose model put the subject's shoulders on the face (at y 10)"),
			"modelImageUrl: the pose model put the subject's shoulders on the face (at y 10)", false},
		{"not enough body", "the preset model photo woman-1", withFace,
			pipelines.Failf("personImage shows too little of the body for a garment"),
			"the preset model photo woman-1 shows too little of the body for a garment", false},
		{"garment not placed", "modelImageUrl", withFace,
			pipelines.Failf("the top garment could not be placed: the shoulders of the person in personImage are not visible enough (3 garment pixels)"),
			"the top garment could not be placed: the shoulders of the person in modelImageUrl are not visible enough (3 garment pixels)", false},
		{"no person with a face", "modelImageUrl", withFace,
			pipelines.Failf("no person found in personImage: the person mask covers 0.1%% of the image"),
			"modelImageUrl: the subject (" + rule + ") was found but its body cannot take a garment: the person mask covers 0.1% of the image", false},
		{"no person, no face", "modelImageUrl", noFace,
			pipelines.Failf("no person found in personImage: the person mask covers 0.1%% of the image"),
			"no person found in modelImageUrl: the person mask covers 0.1% of the image", false},
		{"personImage kept", "personImage", withFace,
			pipelines.Failf("personImage shows too little of the body for a garment"),
			"personImage shows too little of the body for a garment", false},
		{"transient kept", "modelImageUrl", withFace,
			pipelines.Transientf("personImage: busy"), "modelImageUrl: busy", true},
		{"not a job error", "modelImageUrl", withFace, plain, plain.Error(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&Subject{Analysis: tc.a, Photo: tc.photo}).Explain(tc.err)
			if got.Error() != tc.want {
				t.Fatalf("Explain = %q, want %q", got.Error(), tc.want)
			}
			if pipelines.IsTransient(got) != tc.transient {
				t.Errorf("transient %v, want %v", pipelines.IsTransient(got), tc.transient)
			}
		})
	}
}

// TestSubjectPlace: an edited crop (all red) goes back confined to the
// subject's region and blend band: the subject's region is red, every
// pixel where the alpha is 0 (the other person among them) is the
// photo's, and changed_outside_subject measures 0; without a face that is
// the only check.
func TestSubjectPlace(t *testing.T) {
	const w, h = 200, 120
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
		if i%4 == 3 {
			img.Pix[i] = 255 // an opaque photo (keepTransparency is TestKeepTransparency's)
		}
	}
	subject, other := image.Rect(20, 20, 80, 110), image.Rect(130, 20, 190, 110)
	a := &bodypkg.Analysis{W: w, H: h, People: []bodypkg.Person{person(w, h, subject), person(w, h, other)}}
	s := &Subject{Img: img, Analysis: a, Crop: a.CropRect(), Alpha: a.EditAlpha(), Photo: "modelImageUrl"}
	red := image.NewRGBA(image.Rect(0, 0, s.Crop.Dx(), s.Crop.Dy()))
	draw.Draw(red, red.Rect, image.NewUniform(color.RGBA{255, 0, 0, 255}), image.Point{}, draw.Src)
	final, checks, err := s.Place(context.Background(), nil, red)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 1 || checks[0].Name != selfcheck.NameChangedOutside || checks[0].Value != 0 || !checks[0].Pass {
		t.Fatalf("checks %+v, want changed_outside_subject 0 alone", checks)
	}
	for y := range h {
		for x := range w {
			i := y*img.Stride + 4*x
			got, orig := final.Pix[i:i+3], img.Pix[i:i+3]
			switch {
			case image.Pt(x, y).In(subject) && fmt.Sprint(got) != "[255 0 0]":
				t.Fatalf("subject pixel (%d,%d) = %v, want red", x, y, got)
			case s.Alpha.Pix[y*w+x] == 0 && fmt.Sprint(got) != fmt.Sprint(orig):
				t.Fatalf("pixel (%d,%d) outside the subject changed: %v -> %v", x, y, orig, got)
			}
		}
	}
	if s.Note() == "" || !strings.HasPrefix(s.Note(), "subject: ") {
		t.Errorf("note %q, want one naming the subject", s.Note())
	}
}

// TestKeepTransparency: an edit keeps every pixel's alpha; a transparent
// pixel made opaque black by the edit (the cut-out's halo) is transparent
// again, a half-transparent edge keeps its alpha with the edit's colour
// scaled to it, and an opaque photo is left as it is.
func TestKeepTransparency(t *testing.T) {
	for _, tc := range []struct {
		name      string
		orig, out [4]uint8
		want      [4]uint8
	}{
		{"transparent made opaque black", [4]uint8{0, 0, 0, 0}, [4]uint8{0, 0, 0, 255}, [4]uint8{0, 0, 0, 0}},
		{"transparent made opaque red", [4]uint8{0, 0, 0, 0}, [4]uint8{200, 0, 0, 255}, [4]uint8{0, 0, 0, 0}},
		{"half edge edited red", [4]uint8{60, 60, 60, 128}, [4]uint8{200, 0, 0, 255}, [4]uint8{100, 0, 0, 128}},
		{"opaque edited", [4]uint8{1, 2, 3, 255}, [4]uint8{9, 8, 7, 255}, [4]uint8{9, 8, 7, 255}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, out := image.NewRGBA(image.Rect(0, 0, 2, 1)), image.NewRGBA(image.Rect(0, 0, 2, 1))
			copy(orig.Pix, tc.orig[:])
			copy(out.Pix, tc.out[:])
			copy(orig.Pix[4:], []uint8{0, 0, 0, 0}) // a second, transparent pixel the edit left alone
			keepTransparency(orig, out)
			if got := [4]uint8(out.Pix[:4]); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if got := [4]uint8(out.Pix[4:]); got != [4]uint8{} {
				t.Errorf("untouched transparent pixel became %v", got)
			}
		})
	}
}

// person is a Person whose region is the rectangle r of a w×h photo.
func person(w, h int, r image.Rectangle) bodypkg.Person {
	g := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(g, r, image.White, image.Point{}, draw.Src)
	return bodypkg.Person{Region: g, Box: r, Area: r.Dx() * r.Dy()}
}

// TestFindSubjectNamesPhoto: a photo without anyone is a job error naming
// the caller's photo; on the two-person bikes photo both people are found
// and the crop lies inside the photo around the subject.
func TestFindSubjectNamesPhoto(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	blank := image.NewRGBA(image.Rect(0, 0, 320, 240))
	draw.Draw(blank, blank.Rect, image.NewUniform(color.RGBA{200, 200, 200, 255}), image.Point{}, draw.Src)
	_, err := FindSubject(ctx, p, blank, "the generated model photo")
	pipelinetest.WantJobError(t, err, "no person found in the generated model photo: ")
	photo := pipelinetest.Image(t, "images/pixabay_two_women_bikes.jpg")
	s, err := FindSubject(ctx, p, photo, "modelImageUrl")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Analysis.People); n != 2 {
		t.Fatalf("%d people, want 2", n)
	}
	if !s.Analysis.SubjectPerson().Box.In(s.Crop) || !s.Crop.In(photo.Bounds()) || s.Crop.Eq(photo.Bounds()) {
		t.Errorf("crop %v, subject box %v, photo %v", s.Crop, s.Analysis.SubjectPerson().Box, photo.Bounds())
	}
	if s.Face() == nil || s.CropImage().Rect.Size() != s.Crop.Size() {
		t.Errorf("face %v, crop image %v", s.Face(), s.CropImage().Rect)
	}
}
