package tryon

import (
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
	"fashiond/pipelines/capability/selfcheck"
)

// TestTryonRealPhotosFace: a top on the single-person photos never lands
// on the face (the red tee; on the dog photo the green long-sleeve, as the
// tee's short sleeve leaves her arm to a fill and fails arm_painted:
// TestTryonArmPainted). On the standing photos (a side view hugging a dog, a
// frontal man) the job succeeds and the face box is unchanged (before the
// face guard the dog photo measured face_region_change 0.0389 and
// failed); on the head-and-shoulders portrait and the three-quarter
// half-body view, where the pose model puts the shoulders on the face
// (before: 0.2403 and 0.4146, the tee over eyes and mouth), the job fails
// and says so. The two-person photos are TestTryonGroupPhotoConfined's.
func TestTryonRealPhotosFace(t *testing.T) {
	const onFace = "personImage: the pose model put the subject's shoulders on the face"
	for _, tc := range []struct {
		name, garment string
		wantErr       string
	}{
		{"pexels_woman_dog_standing.jpg", "flatlay_longsleeve_green.png", ""},
		{"codait_man_standing.jpg", "flatlay_tee_red.png", ""},
		{"pexels_woman_portrait.png", "flatlay_tee_red.png", onFace + " (at y 305, the face box ends at y 578)"},
		{"pexels_woman_side_halfbody.png", "flatlay_tee_red.png", onFace + " (at y 148, the face box ends at y 285)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := run(t, Inputs{PersonImage: "file:images/" + tc.name, GarmentImage: "file:garments/" + tc.garment, Accuracy: "standard", SampleCount: 1})
			if tc.wantErr != "" {
				pipelinetest.WantJobError(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := res.Outputs[0]
			testenv.WritePNG(t, "tryon_face_"+tc.name+".png", out.Image)
			found := false
			for _, c := range out.Checks {
				if c.Name == selfcheck.NameFaceChange {
					found = true
					if c.Value != 0 || !c.Pass {
						t.Errorf("face_region_change %v (pass %v), want 0", c.Value, c.Pass)
					}
				}
			}
			if !found {
				t.Errorf("no %s check in %+v", selfcheck.NameFaceChange, out.Checks)
			}
		})
	}
}
