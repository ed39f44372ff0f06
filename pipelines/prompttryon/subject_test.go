package prompttryon

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/recolour"
	"fashiond/pipelines/capability/selfcheck"
)

// TestGroupPhotoConfined: on the two-person photos the subject (largest
// face) is dressed and fewer than 1% of the pixels outside her region and
// blend band change; no pixel of the other person outside the band
// changes; the checks are reported and pass.
func TestGroupPhotoConfined(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	for _, name := range []string{"pixabay_two_women_bikes.jpg", "pexels_two_women_phones.jpg"} {
		t.Run(name, func(t *testing.T) {
			work := recolour.FitPixels(pipelinetest.Image(t, "images/"+name), maxWorkPixels)
			s, err := findSubject(ctx, p, work)
			if err != nil {
				t.Fatal(err)
			}
			r, err := recolour.FindRegions(ctx, p, s.cropImg)
			if err != nil {
				t.Fatalf("%v", s.regionsErr(ctx, err))
			}
			spec, err := recolour.Parse("a red top")
			if err != nil {
				t.Fatal(err)
			}
			dressed, err := recolour.DressRegions(s.cropImg, r, spec, 0)
			if err != nil {
				t.Fatal(err)
			}
			out, checks, err := s.confine(ctx, dressed)
			if err != nil {
				t.Fatal(err)
			}
			if dir := os.Getenv("FASHIOND_TEST_OUT"); dir != "" {
				f, _ := os.Create(filepath.Join(dir, "prompttryon_"+name+".png"))
				_ = png.Encode(f, out)
				f.Close()
			}
			a, err := body.Analyze(ctx, p, work)
			if err != nil {
				t.Fatal(err)
			}
			outside := pipelinetest.Outside(a.EditAlpha())
			if c := pipelinetest.ChangedShare(work, out, outside); c >= 0.01 {
				t.Errorf("%.3f%% changed outside the subject, want < 1%%", 100*c)
			} else {
				t.Logf("outside the subject: %.4f%% changed", 100*c)
			}
			others := a.OthersMask()
			for i, v := range outside.Pix {
				others.Pix[i] = min(others.Pix[i], v)
			}
			if c := pipelinetest.ChangedShare(work, out, others); c > 0 {
				t.Errorf("%.3f%% of the other person changed, want 0", 100*c)
			}
			if c := pipelinetest.ChangedShare(work, out, a.SubjectPerson().Region); c < 0.05 {
				t.Errorf("only %.2f%% of the subject changed: no garment recoloured", 100*c)
			}
			for _, c := range checks {
				if !c.Pass {
					t.Errorf("check %+v failed", c)
				}
			}
			if len(checks) != 3 || checks[0].Name != selfcheck.NameChangedOutside || checks[1].Name != selfcheck.NameFaceChange || checks[2].Name != selfcheck.NameFaceFound {
				t.Errorf("checks %+v, want the three subject checks", checks)
			}
			t.Logf("checks %+v", checks)
		})
	}
}

// TestNoPersonWording: a flat-lay garment (no face, no person) fails with
// "no person found"; never so when a face was detected.
func TestNoPersonWording(t *testing.T) {
	p := pipelinetest.Perception(t)
	_, err := findSubject(context.Background(), p, recolour.FitPixels(pipelinetest.Image(t, "garments/flatlay_tee_red.png"), maxWorkPixels))
	if err == nil || !strings.Contains(err.Error(), "no person found") {
		t.Errorf("flat-lay: err = %v, want no person found", err)
	}
}
