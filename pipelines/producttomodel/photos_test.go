package producttomodel

import (
	"context"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/pipelines/capability/style"
	"fashiond/pipelines/capability/transfer"
)

// checkValue is the value of the named check in checks, and whether it is
// there.
func checkValue(checks []pipelines.Check, name string) (float64, bool) {
	for _, c := range checks {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}

// TestModelImagePhotos: the red tee on each real photo as modelImageUrl,
// dressed on the subject's crop as tryon does. codait_man_standing
// succeeds with every check passing, nothing outside the
// subject's region changed before the look is applied
// (changed_outside_subject 0) and the face box unchanged
// (face_region_change 0), the checks listed once each (the styled photo's
// person_painted_over and face_similarity, then the dressing stage's
// changed_outside_subject, face_region_change, hands_covered and
// arm_painted). The bikes photo fails hands_covered and the dog photo
// arm_painted (issue 21: a torn arm that passed every other check); on
// the portrait, the side half-body view and the phones photo the pose
// model puts the shoulders on the face, and the job fails saying so and
// naming modelImageUrl.
func TestModelImagePhotos(t *testing.T) {
	const onFace = "modelImageUrl: the pose model put the subject's shoulders on the face"
	for _, tc := range []struct {
		name    string
		wantErr string
	}{
		// Her long hoodie sleeve over the arm reaching across the dog
		// leaves the forearm and upper arm to a fill: a blurred skin
		// band over the dog's chest, the hand floating at its end.
		{"pexels_woman_dog_standing.jpg", "product-to-model: self-check arm_painted failed: 0.4231 above the limit 0.1"},
		{"codait_man_standing.jpg", ""},
		// The tee's box covers the subject's hand on the handlebar.
		{"pixabay_two_women_bikes.jpg", "product-to-model: self-check hands_covered failed: 0.6197 above the limit 0.35"},
		{"pexels_woman_portrait.png", onFace + " (at y 305, the face box ends at y 578)"},
		{"pexels_woman_side_halfbody.png", onFace + " (at y 148, the face box ends at y 285)"},
		{"pexels_two_women_phones.jpg", onFace + " (at y 726, the face box ends at y 726)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runWith(t, New(pipelinetest.Perception(t), nil), Inputs{ProductImage: "file:garments/flatlay_tee_red.png",
				ModelImageURL: "file:images/" + tc.name, Quality: "1k", SampleCount: 1, Ratio: "3:4"})
			if tc.wantErr != "" {
				pipelinetest.WantJobError(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := res.Outputs[0]
			testenv.WritePNG(t, "ptm_photo_"+tc.name+".png", o.Image)
			for _, c := range o.Checks {
				if !c.Pass {
					t.Errorf("check %+v fails", c)
				}
			}
			for _, name := range []string{selfcheck.NameChangedOutside, selfcheck.NameFaceChange} {
				if v, ok := checkValue(o.Checks, name); !ok || v != 0 {
					t.Errorf("%s = %v (present %v), want 0; checks %+v", name, v, ok, o.Checks)
				}
			}
			var names []string
			for _, c := range o.Checks {
				names = append(names, c.Name)
			}
			want := []string{style.NamePaintedOver, selfcheck.NameFaceFound, selfcheck.NameChangedOutside, selfcheck.NameFaceChange, selfcheck.NameHandsCovered, selfcheck.NameArmPainted}
			if !slices.Equal(names, want) {
				t.Errorf("checks %q, want %q (each once)", names, want)
			}
			t.Logf("checks %+v", o.Checks)
		})
	}
}

// TestDressLeavesOtherPerson: on the bikes photo the tee goes on the
// subject (the woman with the largest face) only: no pixel of the other
// woman (outside the blend band) or of the frame outside the subject's
// region and blend band changes, while a good share of the subject does.
func TestDressLeavesOtherPerson(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	photo := pipelinetest.Image(t, "images/pixabay_two_women_bikes.jpg")
	prod := pipelinetest.Image(t, "garments/flatlay_tee_red.png")
	g, err := transfer.AnalyzeGarment(ctx, p, prod)
	if err != nil {
		t.Fatal(err)
	}
	subj, err := transfer.FindSubject(ctx, p, photo, "modelImageUrl")
	if err != nil {
		t.Fatal(err)
	}
	if len(subj.Analysis.People) != 2 {
		t.Fatalf("%d people found, want 2", len(subj.Analysis.People))
	}
	// The dressed photo fails hands_covered (the tee's box over her hand
	// on the handlebar, issue 21); dress returns it with the error, and
	// its confinement is what this test measures.
	d, err := New(p, nil).dress(ctx, subj, prod, g, transfer.Options{Accuracy: transfer.AccuracyHigh, Seed: 1})
	if err != nil && (d == nil || !strings.Contains(err.Error(), "self-check hands_covered failed")) {
		t.Fatal(err)
	}
	pipelinetest.WritePNG(t, "ptm_dress_bikes.png", d.img)
	if s := bodypkg.ChangedOutside(photo, d.img, subj.Alpha, 0); s != 0 {
		t.Errorf("%.4f%% of the pixels outside the subject changed, want 0", 100*s)
	}
	others := subj.Analysis.OthersMask()
	for i, v := range subj.Alpha.Pix {
		if v != 0 {
			others.Pix[i] = 0 // the blend band may cross her
		}
	}
	if s := pipelinetest.ChangedShare(photo, d.img, others); s != 0 {
		t.Errorf("%.4f%% of the other woman's pixels changed, want 0", 100*s)
	}
	if s := pipelinetest.ChangedShare(photo, d.img, subj.Analysis.SubjectPerson().Region); s < 0.05 {
		t.Errorf("only %.2f%% of the subject changed: the tee is missing", 100*s)
	}
	if !strings.Contains(strings.Join(d.notes, " "), "subject: ") {
		t.Errorf("notes %q do not name the subject", d.notes)
	}
}

// TestMergeChecks: the dressing stage's checks follow the styled photo's,
// those whose names the styled photo's already have left out.
func TestMergeChecks(t *testing.T) {
	styled := []pipelines.Check{{Name: "a", Value: 1}, {Name: "b", Value: 2}}
	for _, tc := range []struct {
		name    string
		dressed []pipelines.Check
		want    []pipelines.Check
	}{
		{"none", nil, styled},
		{"new names", []pipelines.Check{{Name: "c", Value: 3}}, []pipelines.Check{styled[0], styled[1], {Name: "c", Value: 3}}},
		{"a repeated name", []pipelines.Check{{Name: "b", Value: 9}, {Name: "c", Value: 3}}, []pipelines.Check{styled[0], styled[1], {Name: "c", Value: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeChecks(styled, tc.dressed); !slices.Equal(got, tc.want) {
				t.Errorf("mergeChecks = %+v, want %+v", got, tc.want)
			}
			if len(styled) != 2 || styled[1].Value != 2 {
				t.Errorf("styled changed: %+v", styled)
			}
		})
	}
}
