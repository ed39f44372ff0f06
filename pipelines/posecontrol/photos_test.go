package posecontrol

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
)

// TestArmsRaisedPhotos runs the contact sheet's pose-control job (poses
// "arms raised" and "hands on hips") on the six real photos. Each either
// succeeds with every check passing and the pinned figures, or fails
// with the pinned reason: a portrait whose skeleton lies on the face and
// a photo whose arm is hidden behind a dog say what the photo lacks
// instead of a pose_agreement of 0; the bikes photo fails ghost_smear
// (see its case), codait_man_standing carried_background (see its case); the one whose re-pose tears the torso open (phones: the pose model's
// shoulders sit at the chin and the hand) fails largest_torn_hole.
func TestArmsRaisedPhotos(t *testing.T) {
	p := pipelinetest.Perception(t)
	for _, c := range []struct {
		file string
		err  string               // the job's error; "" when it succeeds
		want []map[string]float64 // per output: check name -> value
	}{
		{file: "pexels_woman_dog_standing.jpg", err: "pose-control: poses[0]: the pose moves the person's left arm, which the photo does not show (the pose model sees its elbow with visibility 0.06, below 0.3: hidden behind something or outside the frame); only limbs the photo shows can be moved"},
		// Issue 21: both outputs passed every check yet carried the wall the
		// person mask takes in around the hands (a flat skin-coloured patch
		// on the jeans with hands on hips, beige halos round the raised
		// hands); the arms' layers are 39% plate-like pixels
		// (carried_background 0.3937). "arms raised" also leaves his hands
		// where they hung beside the raised arms (hand_left_behind, the
		// first check to fail; 0.1322 before unmoved parts became the
		// photo's own pixels, 0.1374 after).
		{file: "codait_man_standing.jpg", err: "pose-control: poses[0]: self-check hand_left_behind failed: 0.1374 above the limit 0.1"},
		{file: "pexels_woman_portrait.png", err: "pose-control: inputs.modelImage: the body is not in the photo: the pose model puts the shoulders on the face (a head-and-shoulders portrait?); re-posing needs the shoulders, arms and torso visible below the face"},
		{file: "pexels_woman_side_halfbody.png", err: "pose-control: inputs.modelImage: the body is not in the photo: the pose model puts the shoulders on the face (a head-and-shoulders portrait?); re-posing needs the shoulders, arms and torso visible below the face"},
		// Since the pose-claim split (issue 21) the hand she rests on the
		// other woman's shoulder is hers and the other woman stays
		// untouched. Looked at: "arms raised" leaves a white ghost patch
		// beside the raised right hand and a blurred smear where the left
		// arm was (largest_tear 0.0003, pose_agreement 0.75 passed it); the
		// body-integrity check's ghost_smear fails it.
		{file: "pixabay_two_women_bikes.jpg", err: "pose-control: poses[0]: self-check ghost_smear failed: 0.0082 above the limit 0.0025"},
		// The torso torn open (largest_torn_hole 0.0418); its narrow part
		// is the first to fail, largest_tear.
		{file: "pexels_two_women_phones.jpg", err: "pose-control: poses[0]: self-check largest_tear failed: 0.002 above the limit 0.001"},
		// The transparent cut-out was refused for its background: black
		// once premultiplied, read as a hole (largest_hole 0.0153). Laid
		// over white (raster.OnWhite) the re-pose is measured on the
		// person. Looked at: "arms raised" cuts both hands off at the top
		// of the frame and tears the sleeves (hand_out_of_frame 1 fails
		// too); "hands on hips" tears notches out of the shoulders and
		// carries white patches onto the shirt and jeans
		// (carried_background 0.3952). hand_left_behind, the first to
		// fail, also counts the white margin the person mask takes in
		// around the old hand, which the white plate repeats.
		{file: "codait_man_tpose_cutout.png", err: "pose-control: poses[0]: self-check hand_left_behind failed: 0.6024 above the limit 0.1"},
	} {
		t.Run(c.file, func(t *testing.T) {
			in := Inputs{ModelImage: "file:images/" + c.file, Quality: "1k", Poses: []PoseSpec{
				{Type: "custom", Text: "arms raised"}, {Type: "custom", Text: "hands on hips"}}}
			res, err := New(p).Run(context.Background(), request(t, in))
			if c.err != "" {
				var pe *pipelines.Error
				if !errors.As(err, &pe) || pe.Msg != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != len(c.want) {
				t.Fatalf("%d outputs, want %d", len(res.Outputs), len(c.want))
			}
			for i, o := range res.Outputs {
				pipelinetest.WritePNG(t, fmt.Sprintf("photos_%s_%d.png", strings.TrimSuffix(c.file, ".jpg"), i), o.Image)
				got := map[string]float64{}
				for _, ch := range o.Checks {
					if !ch.Pass {
						t.Errorf("output %d: check %+v failed", i, ch)
					}
					got[ch.Name] = ch.Value
				}
				for name, v := range c.want[i] {
					if g, ok := got[name]; !ok || g != v {
						t.Errorf("output %d: %s = %v (present %v), want %v", i, name, g, ok, v)
					}
				}
			}
		})
	}
}

// TestCheckErrorNamesMissedBones: a failed pose_agreement names the
// missed bones as an English list; another failed check, or no missed
// bone, keeps CheckError's message; all passing is nil.
func TestCheckErrorNamesMissedBones(t *testing.T) {
	agree := pipelines.MinCheck("pose_agreement", 0.25, 0.5)
	tear := pipelines.MaxCheck("largest_tear", 0.01, 0.005)
	ok := pipelines.MinCheck("pose_agreement", 1, 0.5)
	for _, c := range []struct {
		name   string
		checks []pipelines.Check
		missed []string
		want   string
	}{
		{"one bone", []pipelines.Check{agree}, []string{"left forearm"}, "pose-control: poses[1]: self-check pose_agreement failed: 0.25 below the limit 0.5 (on the output the pose model finds the left forearm more than 35 degrees from the requested direction, or not at all)"},
		{"three bones", []pipelines.Check{agree}, []string{"a", "b", "c"}, "pose-control: poses[1]: self-check pose_agreement failed: 0.25 below the limit 0.5 (on the output the pose model finds the a, b and c more than 35 degrees from the requested direction, or not at all)"},
		{"tear first", []pipelines.Check{tear, agree}, []string{"left forearm"}, "pose-control: poses[1]: self-check largest_tear failed: 0.01 above the limit 0.005"},
		{"no missed bone", []pipelines.Check{agree}, nil, "pose-control: poses[1]: self-check pose_agreement failed: 0.25 below the limit 0.5"},
		{"all pass", []pipelines.Check{ok}, []string{"left forearm"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := measured{checks: c.checks, missed: c.missed}.checkError(1)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
