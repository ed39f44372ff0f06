package tryon

import (
	"context"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/selfcheck"
)

// TestTryonGroupPhotoConfined: on the two-person photos the garment goes on
// the subject (the person with the largest face) and fewer than 1% of the
// pixels outside the subject's region and blend band change; the other
// person is untouched; the output reports its checks, all passing. On the
// phones photo the subject's turned head and raised arm mislead the pose,
// which puts her shoulders at her chin: the face guard (package transfer)
// fails the job saying so (before it, the tee landed on her chin and the
// face check failed at 0.0647), never with "no person found". On the bikes
// photo the tee's box covers the subject's hand (issue 21): the job fails
// hands_covered, so neither photo reaches the confinement measures here
// today; a photo that dresses whole would.
func TestTryonGroupPhotoConfined(t *testing.T) {
	p := pipelinetest.Perception(t)
	for _, tc := range []struct{ name, wantErr string }{
		// The tee's box covers the subject's hand on the handlebar
		// (TestTryonHandsCovered); confinement on crowded photos is
		// TestTryonCrowdStaysOnSubject's.
		{"pixabay_two_women_bikes.jpg", "tryon: self-check hands_covered failed: 0.5047 above the limit 0.35"},
		{"pexels_two_women_phones.jpg", "personImage: the pose model put the subject's shoulders on the face (at y 726, the face box ends at y 726)"},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			person := pipelinetest.Image(t, "images/"+name)
			res, err := run(t, Inputs{PersonImage: "file:images/" + name, GarmentImage: "file:garments/flatlay_tee_red.png", Accuracy: "standard", SampleCount: 1})
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := res.Outputs[0]
			testenv.WritePNG(t, "tryon_"+name+".png", out.Image)
			a, err := bodypkg.Analyze(context.Background(), p, person)
			if err != nil {
				t.Fatal(err)
			}
			outside := pipelinetest.Outside(a.EditAlpha())
			if s := pipelinetest.ChangedShare(person, out.Image, outside); s >= 0.01 {
				t.Errorf("%.3f%% of the pixels outside the subject changed, want < 1%%", 100*s)
			} else {
				t.Logf("outside the subject: %.4f%% changed", 100*s)
			}
			others := pipelinetest.Outside(a.EditAlpha()) // outside the band ...
			for i, v := range a.OthersMask().Pix {
				if v == 0 {
					others.Pix[i] = 0 // ... and on another person
				}
			}
			if s := pipelinetest.ChangedShare(person, out.Image, others); s > 0 {
				t.Errorf("%.3f%% of the other people's pixels changed, want 0", 100*s)
			}
			if s := pipelinetest.ChangedShare(person, out.Image, a.SubjectPerson().Region); s < 0.05 {
				t.Errorf("only %.2f%% of the subject changed: the garment is missing", 100*s)
			}
			names := map[string]bool{}
			for _, c := range out.Checks {
				names[c.Name] = true
				if !c.Pass {
					t.Errorf("check %+v failed", c)
				}
			}
			for _, n := range []string{selfcheck.NameChangedOutside, selfcheck.NameFaceChange, selfcheck.NameFaceFound} {
				if !names[n] {
					t.Errorf("check %s missing in %+v", n, out.Checks)
				}
			}
			t.Logf("checks %+v", out.Checks)
		})
	}
}
