package tryon

import (
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/selfcheck"
)

// TestTryonHandsCovered: on pixabay_two_women_bikes the garment's box
// covered the subject's hand on the handlebar and erased the handlebar
// through it (looked at), while the old checks passed
// (changed_outside_subject 0, face_region_change 0, face_similarity
// 0.97); hands_covered fails it now. Whole hands pass: the red tee on
// codait_man_standing (hands hanging by the thighs), the green
// long-sleeve on fashn_model (its cuffs reach the wrists).
func TestTryonHandsCovered(t *testing.T) {
	for _, c := range []photoCheck{
		{"pixabay_two_women_bikes.jpg", "flatlay_tee_red.png", 0, "tryon: self-check hands_covered failed: 0.5047 above the limit 0.35"},
		{"codait_man_standing.jpg", "flatlay_tee_red.png", 0, ""},
		{"fashn_model.webp", "flatlay_longsleeve_green.png", 0.1504, ""},
	} {
		checkCase(t, selfcheck.NameHandsCovered, c.person, c.garment, c.want, c.err)
	}
}

// photoCheck is a tryon job on a shared photo and what a check says of
// it (checkCase).
type photoCheck struct {
	person, garment string
	want            float64
	err             string
}

// checkCase runs tryon (garment on person, standard) and wants the job
// refused with the job error err (a prefix) or, when err is "", the named
// check passing with the value want.
func checkCase(t *testing.T, name, person, garment string, want float64, err string) {
	t.Helper()
	t.Run(person+"/"+garment, func(t *testing.T) {
		res, rerr := run(t, Inputs{PersonImage: "file:images/" + person, GarmentImage: "file:garments/" + garment, Accuracy: "standard", SampleCount: 1})
		if err != "" {
			pipelinetest.WantJobError(t, rerr, err)
			return
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, ch := range res.Outputs[0].Checks {
			if ch.Name == name {
				if !ch.Pass || ch.Value != want {
					t.Errorf("%+v, want passing with %v", ch, want)
				}
				return
			}
		}
		t.Errorf("no %s check in %+v", name, res.Outputs[0].Checks)
	})
}
