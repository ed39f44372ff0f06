package posecontrol

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/repose"
)

// measureOne re-poses the person of a test photo to a pose text and
// returns every check's value (the old ones and the body-integrity ones)
// before the job would fail on any of them.
func measureOne(t *testing.T, file, pose string) (map[string]float64, error) {
	t.Helper()
	p := pipelinetest.Perception(t)
	pl := New(p)
	ctx := context.Background()
	img := repose.FitPixels(pipelinetest.Image(t, "images/"+file), maxWorkPixels)
	jb, err := pl.source(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := repose.ParsePoseText(pose)
	if err != nil {
		t.Fatal(err)
	}
	target, err := pp.Apply(jb.src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := jb.rp.Repose(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pl.measure(ctx, jb.sc.Image, jb.sc.PersonMask, jb.rp.S, r, jb.a)
	if err != nil {
		t.Fatal(err)
	}
	pipelinetest.WritePNG(t, fmt.Sprintf("integrity_%s_%s.png", file, pose), m.final)
	got := map[string]float64{}
	for _, c := range m.checks {
		got[c.Name] = c.Value
	}
	return got, m.checkError(0)
}

// TestBodyIntegrityOnPhotos: pose-control outputs of real photos that the
// old checks (largest_hole, largest_tear, largest_torn_hole,
// pose_agreement) pass although they are damaged, each failing a
// body-integrity check now. Looked at (FASHIOND_TEST_OUT): fashn_model
// "walking": the left leg stretched into a tube, the shoe left floating
// at the bottom left, a large brown smear where the knee was;
// fashn_model "arms raised": the raised arms thin and cut off at the
// sleeves, dark smears where the arms hung; pixabay_two_women_bikes
// "arms raised": a white ghost patch beside the raised right hand and a
// smear where the left arm was; codait_man_standing "walking": a brown
// smear on the carpet between the legs where the left leg stood.
func TestBodyIntegrityOnPhotos(t *testing.T) {
	for _, c := range []struct {
		file, pose string
		want       map[string]float64
		fails      string // the first body-integrity check the output fails
	}{
		{"fashn_model.webp", "walking", map[string]float64{"largest_tear": 0.0009, "largest_torn_hole": 0.002, "pose_agreement": 0.6667,
			"limb_width": 1, "person_pieces": 0.034, "ghost_smear": 0.0706}, "person_pieces"},
		{"fashn_model.webp", "arms raised", map[string]float64{"largest_tear": 0.0034, "largest_torn_hole": 0.0034, "pose_agreement": 1,
			"limb_width": 0.5862, "person_pieces": 0, "ghost_smear": 0.0259}, "limb_width"},
		{"pixabay_two_women_bikes.jpg", "arms raised", map[string]float64{"largest_tear": 0.0003, "largest_torn_hole": 0.0003, "pose_agreement": 0.75,
			"limb_width": 0.9286, "person_pieces": 0, "ghost_smear": 0.0082}, "ghost_smear"},
		{"codait_man_standing.jpg", "walking", map[string]float64{"largest_tear": 0, "largest_torn_hole": 0, "pose_agreement": 1,
			"limb_width": 0.9524, "person_pieces": 0, "ghost_smear": 0.0065}, "ghost_smear"},
	} {
		t.Run(c.file+"/"+c.pose, func(t *testing.T) {
			got, err := measureOne(t, c.file, c.pose)
			if err == nil || !strings.Contains(err.Error(), "self-check "+c.fails+" failed") {
				t.Errorf("job error %v, want %s failing", err, c.fails)
			}
			for name, v := range c.want {
				if g, ok := got[name]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
				}
			}
		})
	}
}
