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
	for _, c := range []struct {
		person, garment string
		want            float64
		err             string
	}{
		{"pixabay_two_women_bikes.jpg", "flatlay_tee_red.png", 0, "tryon: self-check hands_covered failed: 0.5047 above the limit 0.35"},
		{"codait_man_standing.jpg", "flatlay_tee_red.png", 0, ""},
		{"fashn_model.webp", "flatlay_longsleeve_green.png", 0.1504, ""},
	} {
		t.Run(c.person, func(t *testing.T) {
			res, err := run(t, Inputs{PersonImage: "file:images/" + c.person, GarmentImage: "file:garments/" + c.garment, Accuracy: "standard", SampleCount: 1})
			if c.err != "" {
				pipelinetest.WantJobError(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range res.Outputs[0].Checks {
				if ch.Name == selfcheck.NameHandsCovered {
					if !ch.Pass || ch.Value != c.want {
						t.Errorf("%+v, want passing with %v", ch, c.want)
					}
					return
				}
			}
			t.Errorf("no %s check in %+v", selfcheck.NameHandsCovered, res.Outputs[0].Checks)
		})
	}
}
