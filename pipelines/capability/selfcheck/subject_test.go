package selfcheck_test

import (
	"context"
	"image"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/selfcheck"
)

// TestChangedOutsideSubjectSeesNeighbour: on the crowded photos, an edit
// confined with an alpha that reaches over the neighbour (as the old
// vertical split of a shared person mask gave half a seated neighbour to
// the subject) changes the neighbour; changed_outside_subject measured
// against that alpha (the old measure) says 0 and passes, measured against
// the subject's own mask it sees the damage and fails.
func TestChangedOutsideSubjectSeesNeighbour(t *testing.T) {
	p := pipelinetest.Perception(t)
	for _, c := range pipelinetest.Crowds(t) {
		t.Run(c.Name, func(t *testing.T) {
			a, err := body.Analyze(context.Background(), p, c.Img)
			if err != nil {
				t.Fatal(err)
			}
			wide := image.NewGray(c.Img.Rect)
			copy(wide.Pix, a.SubjectPerson().Region.Pix)
			for i, v := range c.Neighbour.Pix {
				wide.Pix[i] = max(wide.Pix[i], v)
			}
			alpha := body.BandAlpha(wide, a.Band())
			edited := image.NewRGBA(c.Img.Rect)
			for i := range edited.Pix {
				edited.Pix[i] = 255 - c.Img.Pix[i]
				if i%4 == 3 {
					edited.Pix[i] = 255
				}
			}
			damaged := body.Confine(c.Img, edited, alpha)
			old := selfcheck.ChangedOutside(c.Img, damaged, alpha)
			own := selfcheck.ChangedOutsideSubject(c.Img, damaged, a)
			t.Logf("%s: against the stage's alpha %v, against the subject's own mask %v", c.Name, old.Value, own.Value)
			if old.Value != 0 || !old.Pass {
				t.Errorf("against the stage's alpha: %+v, want 0", old)
			}
			if own.Pass {
				t.Errorf("against the subject's own mask: %+v, want a failure", own)
			}
			clean := body.Confine(c.Img, edited, a.EditAlpha())
			if ok := selfcheck.ChangedOutsideSubject(c.Img, clean, a); ok.Value != 0 {
				t.Errorf("an edit confined to the subject measures %v, want 0", ok.Value)
			}
		})
	}
}
