package anglegeneration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/selfcheck"
)

// TestClassicalViewsOnPhotos runs the contact sheet's angle-generation
// views (left45, back) on the shared photos, classical path. Before issue
// 21's checks every one succeeded; the ones pinned to an error here were
// damaged: the turned views left a smooth wedge of plate fill on a
// textured background (the dog, the grass, the trees, the carpet smeared;
// ghost_smear), the back views of a head-and-shoulders portrait painted
// a hair mass over the face (the body is not in the photo), and the
// back views of the two-people photos showed a hair-covered face or a
// dark blob for a head over a smeared body beside a smear of plate fill
// (ghost_smear). Since ghost_smear compares each vacated pixel with the
// background near it (not a whole vacated part with its ring) the side
// half-body's left45 is refused too: the outer half of her hair is
// replaced by a flat fill with cut strands floating beside it. The
// outputs still returned were looked at: a back of the head over the
// mirrored body. Every view rendered, returned or refused, shows no
// duplicated head (duplicated_head 0: one face or none where the subject
// is and stood).
func TestClassicalViewsOnPhotos(t *testing.T) {
	perc := pipelinetest.Perception(t)
	pl := New(perc)
	noBody := "inputs.imageUrl: angle back: the body is not in the photo: the pose model puts the shoulders on the face (a head-and-shoulders portrait?); the classical back view paints hair over the head and mirrors the body below it, so it needs the shoulders and torso visible below the face"
	smear := func(id string, v float64) string {
		return fmt.Sprintf("angle-generation: angle %s: self-check ghost_smear failed: %g above the limit 0.0025", id, v)
	}
	for _, c := range []struct {
		file, id, err string
	}{
		{"pexels_woman_dog_standing.jpg", Left45, smear(Left45, 0.0827)},
		{"pexels_woman_dog_standing.jpg", Back, ""},
		{"codait_man_standing.jpg", Left45, smear(Left45, 0.0359)},
		{"codait_man_standing.jpg", Back, ""},
		{"pexels_woman_portrait.png", Left45, smear(Left45, 0.0707)},
		{"pexels_woman_portrait.png", Back, noBody},
		{"pexels_woman_side_halfbody.png", Left45, smear(Left45, 0.0283)},
		{"pexels_woman_side_halfbody.png", Back, noBody},
		{"pixabay_two_women_bikes.jpg", Left45, smear(Left45, 0.0065)},
		{"pixabay_two_women_bikes.jpg", Back, smear(Back, 0.0326)},
		{"pexels_two_women_phones.jpg", Left45, smear(Left45, 0.0645)},
		{"pexels_two_women_phones.jpg", Back, smear(Back, 0.0098)},
		{"fashn_model.webp", Right45, smear(Right45, 0.0974)},
	} {
		t.Run(c.file+"/"+c.id, func(t *testing.T) {
			r, err := pl.Prepare(context.Background(), pipelinetest.Image(t, "images/"+c.file))
			if err != nil {
				t.Fatal(err)
			}
			v, err := r.Render(c.id, "")
			if err == nil {
				dump(t, "classical_"+strings.Split(c.file, ".")[0]+"_"+c.id+".png", v.Image)
				var o pipelines.Output
				o, err = pl.finish(context.Background(), r, v, c.id, 1, nil)
				i := slices.IndexFunc(o.Checks, func(ch pipelines.Check) bool { return ch.Name == selfcheck.NameDuplicatedHead })
				if i < 0 || o.Checks[i].Value != 0 {
					t.Errorf("checks %+v, want %s 0", o.Checks, selfcheck.NameDuplicatedHead)
				}
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.err {
				t.Errorf("error %q, want %q", got, c.err)
			}
		})
	}
}

// TestLeft45CarpetSmearAtTier: angle-generation left45 of
// codait_man_standing as the API sends it (quality 1k, no ratio: the
// pipeline frames it 9:16, a 385x684 crop of the 413x684 photo, and the
// tier step comes after the checks) leaves a blurred rectangle on the
// carpet beside his foot and a doubled stool (looked at). ghost_smear
// measured each vacated part against its ring, and the part there runs
// from the plain wall down onto the carpet: its flatness was 0.49 of its
// ring's on the whole photo (refused, 0.1164) and 0.52 on the 9:16 crop
// (passed, 0.0004). Measured pixel by pixel against the background near
// it, the smear reads 0.0353 on the crop and 0.0359 on the whole photo
// (TestClassicalViewsOnPhotos): refused either way.
func TestLeft45CarpetSmearAtTier(t *testing.T) {
	in, err := json.Marshal(map[string]any{"imageUrl": "file:images/codait_man_standing.jpg", "angleIds": []string{Left45}, "quality": "1k"})
	if err != nil {
		t.Fatal(err)
	}
	req := &pipelines.Request{Model: "angle-generation", Inputs: pipelinetest.Inputs(t, "angle-generation", string(in)),
		Images: pipelinetest.Loader{Dir: pipelinetest.Testdata(t)}, Progress: pipelinetest.NoProgress}
	_, err = New(pipelinetest.Perception(t)).Run(context.Background(), req)
	want := "angle-generation: angle left45: self-check ghost_smear failed: 0.0353 above the limit 0.0025"
	var pe *pipelines.Error
	if !errors.As(err, &pe) || pe.Msg != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
