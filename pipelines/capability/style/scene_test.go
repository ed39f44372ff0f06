package style

import (
	"context"
	"image"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
)

// TestBackdropRule runs the backdrop rule on real photos: a standing man
// gets the studio sweep; a seated man and both two-person photos keep
// their background, with a note naming why.
func TestBackdropRule(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	cases := []struct {
		file   string
		people int
		why    string // "" = backdrop painted
	}{
		{"codait_man_standing.jpg", 1, ""},
		{"fashn_model.webp", 1, "seated"},
		{"pixabay_two_women_bikes.jpg", 2, "the photo shows 2 people"},
		{"pexels_two_women_phones.jpg", 2, "the photo shows 2 people"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			img := pipelinetest.Image(t, "images/"+c.file)
			s, err := AnalyzeScene(ctx, p, img)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.a.People) != c.people {
				t.Fatalf("%d people, want %d", len(s.a.People), c.people)
			}
			ok, why := s.Backdrop()
			if ok != (c.why == "") || !strings.Contains(why, c.why) {
				t.Fatalf("Backdrop() = %v %q, want refusal containing %q", ok, why, c.why)
			}
			if c.people < 2 {
				return
			}
			st, err := ApplyScene(ctx, p, img, "studio", 7, s)
			if err != nil {
				t.Fatal(err)
			}
			// The others stay part of the scene: exactly the look without
			// a backdrop, and the note says so.
			plain, err := Apply(img, "studio", Options{Seed: 7, PersonMask: s.mask, NoBackdrop: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := meanAbsDiff(plain, st.Image, nil); d != 0 {
				t.Errorf("styled photo differs from the look without backdrop by %.3f/255", d)
			}
			if len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "backdrop not painted: the photo shows 2 people") {
				t.Errorf("notes %q", st.Notes)
			}
			checkNames(t, st, NamePaintedOver, selfcheck.NameFaceFound)
		})
	}
}

// TestBackdropFallsBackWhenItPaintsOverThePerson: on the greyscale
// camera photo the cut-out loses the man's grey coat against the grey sky;
// the backdrop is refused, the note gives the figure.
func TestBackdropFallsBackWhenItPaintsOverThePerson(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	img := pipelinetest.Image(t, "images/camera.png")
	s, err := AnalyzeScene(ctx, p, img)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := s.Backdrop(); !ok {
		t.Fatalf("rule refused the backdrop before painting: %s", why)
	}
	_, matte := looks["studio"].apply(raster.CopyRGBA(img), Options{Seed: 1, PersonMask: s.mask})
	if v := paintedOver(s.a, matte, nil); v <= MaxPaintedOver {
		t.Fatalf("forced backdrop painted over %.4f of the person, want above %.2f (the case this test is about)", v, MaxPaintedOver)
	}
	st, err := ApplyScene(ctx, p, img, "studio", 1, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "would have painted over") {
		t.Errorf("notes %q", st.Notes)
	}
	if c := st.Checks[0]; c.Name != NamePaintedOver || c.Value != 0 || !c.Pass {
		t.Errorf("check %+v, want %s 0 after the fallback", c, NamePaintedOver)
	}
}

// TestStandingManGetsBackdrop: the backdrop is painted, measured and
// passes; the face is still found.
func TestStandingManGetsBackdrop(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	img := pipelinetest.Image(t, "images/codait_man_standing.jpg")
	s, err := AnalyzeScene(ctx, p, img)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ApplyScene(ctx, p, img, "minimalist", 2, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Notes) != 0 {
		t.Errorf("notes %q, want none", st.Notes)
	}
	checkNames(t, st, NamePaintedOver, selfcheck.NameFaceFound)
	for _, c := range st.Checks {
		if !c.Pass {
			t.Errorf("check %+v failed", c)
		}
	}
	// The orange wall is gone: the corner is near-white paper.
	r, g, b, _ := st.Image.At(10, 10).RGBA()
	if r>>8 < 200 || g>>8 < 200 || b>>8 < 200 {
		t.Errorf("corner %d,%d,%d, want the near-white backdrop", r>>8, g>>8, b>>8)
	}
}

func checkNames(t *testing.T, st *Styled, names ...string) {
	t.Helper()
	if len(st.Checks) != len(names) {
		t.Fatalf("checks %+v, want %v", st.Checks, names)
	}
	for i, n := range names {
		if st.Checks[i].Name != n {
			t.Errorf("check %d is %s, want %s", i, st.Checks[i].Name, n)
		}
	}
}

// TestPaintedOver measures synthetic mattes over a 40x40 person square in
// a 100x100 photo (band 3 px: the inner 34x34 counts).
func TestPaintedOver(t *testing.T) {
	region := image.NewGray(image.Rect(0, 0, 100, 100))
	for y := 30; y < 70; y++ {
		for x := 30; x < 70; x++ {
			region.Pix[y*100+x] = 255
		}
	}
	a := &body.Analysis{W: 100, H: 100, People: []body.Person{{Region: region}}}
	keep := func(f func(x, y int) bool) []float32 {
		m := make([]float32, 100*100)
		for y := 0; y < 100; y++ {
			for x := 0; x < 100; x++ {
				if f(x, y) {
					m[y*100+x] = 1
				}
			}
		}
		return m
	}
	cases := []struct {
		name  string
		matte []float32
		want  float64
		pass  bool
	}{
		{"no backdrop", nil, 0, true},
		{"person kept", keep(func(x, y int) bool { return x >= 30 && x < 70 && y >= 30 && y < 70 }), 0, true},
		{"left half painted", keep(func(x, y int) bool { return x >= 50 }), 0.5, false},
		{"all painted", keep(func(x, y int) bool { return false }), 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := paintedOver(a, c.matte, nil)
			if v < c.want-0.02 || v > c.want+0.02 {
				t.Errorf("paintedOver = %.4f, want %.2f", v, c.want)
			}
			if pass := v <= MaxPaintedOver; pass != c.pass {
				t.Errorf("pass %v, want %v", pass, c.pass)
			}
		})
	}
}

// TestThighAngle: the seated test on synthetic poses.
func TestThighAngle(t *testing.T) {
	pose := func(hip, knee perception.Keypoint) *perception.Pose {
		p := &perception.Pose{Presence: 0.9}
		p.Keypoints[perception.KpLeftHip], p.Keypoints[perception.KpLeftKnee] = hip, knee
		return p
	}
	kp := func(x, y, vis float64) perception.Keypoint { return perception.Keypoint{X: x, Y: y, Visibility: vis} }
	cases := []struct {
		name string
		pose *perception.Pose
		deg  float64
		ok   bool
	}{
		{"standing", pose(kp(50, 100, 1), kp(52, 160, 1)), 1.9, true},
		{"seated", pose(kp(50, 100, 1), kp(110, 105, 1)), 85.2, true},
		{"knee hidden", pose(kp(50, 100, 1), kp(110, 105, 0.2)), 0, false},
		{"knee out of frame", pose(kp(50, 100, 1), kp(110, 260, 1)), 0, false},
		{"no pose", &perception.Pose{Presence: 0.1}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			deg, ok := thighAngle(c.pose, 200, 200)
			if ok != c.ok || deg < c.deg-0.1 || deg > c.deg+0.1 {
				t.Errorf("thighAngle = %.1f %v, want %.1f %v", deg, ok, c.deg, c.ok)
			}
		})
	}
}

// TestStudioBackdropOnCutout: on codait_man_tpose_cutout.png (RGBA, the
// background transparent, black in premultiplied pixels) the studio
// backdrop left a dark wedge between the legs, where the person mask took
// the black gap for the person (issue 21's third pass, product-to-model
// with the photo as modelImageUrl; every check passed). A transparent
// pixel is never the person: none of them may stay dark (every channel
// below 60) under the backdrop. Before the rule: 5,481 such pixels.
func TestStudioBackdropOnCutout(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	img := raster.RGBA(pipelinetest.Image(t, "images/codait_man_tpose_cutout.png"))
	s, err := AnalyzeScene(ctx, p, img)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := s.Backdrop(); !ok {
		t.Fatalf("no backdrop: %s", why)
	}
	st, err := ApplyScene(ctx, p, img, "studio", 1, s)
	if err != nil {
		t.Fatal(err)
	}
	pipelinetest.WritePNG(t, "style_studio_cutout.png", st.Image)
	dark := 0
	for i := 0; i < len(img.Pix); i += 4 {
		o := st.Image.Pix[i : i+3]
		if img.Pix[i+3] == 0 && max(o[0], o[1], o[2]) < 60 {
			dark++
		}
	}
	t.Logf("transparent pixels left dark under the backdrop: %d", dark)
	if dark != 0 {
		t.Errorf("%d transparent pixels left dark under the backdrop, want 0", dark)
	}
}
