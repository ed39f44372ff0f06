package prompttryon

import (
	"context"
	"errors"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/recolour"
)

// TestBodyPaintIsNoTop: "a red top" on the face-paint portrait, a woman
// with bare shoulders and white, orange and dark body-paint stripes on her
// neck and collarbones and no top on. The skin/clothes/hair parser calls
// the paint and the skin between it clothes: before marks on bare skin
// were told from garments, the "top" covered 0.0488 of the image and the
// output painted the stripes and a smear of neck skin red while every
// check passed it. Now the paint (4.80% of the image) is left alone, no
// top is found, and the job fails saying the person wears no top to
// recolour.
func TestBodyPaintIsNoTop(t *testing.T) {
	const photo = "pexels_woman_facepaint_portrait.png"
	pl := New(pipelinetest.Perception(t), nil)
	ctx := context.Background()
	work := recolour.FitPixels(pipelinetest.Image(t, "images/"+photo), maxWorkPixels)
	s, err := findSubject(ctx, pl.p, work)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recolour.FindRegions(ctx, pl.p, s.cropImg)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := recolour.Parse("a red top")
	if err != nil {
		t.Fatal(err)
	}
	var re *recolour.RegionError
	if err := r.Check(spec); !errors.As(err, &re) || re.Area > 0.001 || re.Marks < 0.03 {
		t.Fatalf("regions check: %v (%+v), want a RegionError with the top under 0.1%% and at least 3%% marks on skin", err, re)
	}
	t.Logf("top %.4f, marks on skin %.4f", re.Area, re.Marks)
	_, err = run(t, pl, map[string]any{"personImage": "file:images/" + photo, "prompt": "a red top"})
	pipelinetest.WantJobError(t, err, "prompt-tryon: found no top region")
	for _, want := range []string{"the person wears no top to recolour", "paint or marks on bare skin", "does not draw new ones"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var pe *pipelines.Error
	if errors.As(err, &pe) && pe.Transient {
		t.Errorf("error is transient: %v", err)
	}
}
