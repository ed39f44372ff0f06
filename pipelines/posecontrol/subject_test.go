package posecontrol

import (
	"context"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/repose"
	"fashiond/pipelines/capability/scene"
	"fashiond/pipelines/capability/selfcheck"
)

// TestMultiPersonConfined re-poses the subject of the two-person photos:
// the other woman's pixels are identical, less than 1% of the pixels
// outside the subject's old and new regions and band change, and the
// checks pass (duplicated_head 0: the other woman's head is not counted).
func TestMultiPersonConfined(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	pl := New(p)
	for _, c := range []struct{ file, text string }{
		{"images/pixabay_two_women_bikes.jpg", "arms raised"},
		{"images/pexels_two_women_phones.jpg", "arms out"},
	} {
		t.Run(c.file, func(t *testing.T) {
			work := repose.FitPixels(pipelinetest.Image(t, c.file), maxWorkPixels)
			a, err := pl.people(ctx, work)
			if err != nil || a == nil || !a.Several() {
				t.Fatalf("people: %v %v", a, err)
			}
			sc, err := scene.Layers(ctx, p, work, scene.Options{Subject: a.EditAlpha()})
			if err != nil {
				t.Fatal(err)
			}
			rp, err := repose.NewReposer(ctx, p, sc)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := repose.TargetFromText(c.text, sc.Pose)
			if err != nil {
				t.Fatal(err)
			}
			r, err := rp.Repose(ctx, tg)
			if err != nil {
				t.Fatal(err)
			}
			m, err := pl.measure(ctx, work, sc.PersonMask, rp.S, r, a)
			if err != nil {
				t.Fatal(err)
			}
			final, checks, note := m.final, m.checks, m.note
			name := strings.TrimSuffix(strings.TrimPrefix(c.file, "images/"), ".jpg")
			pipelinetest.WritePNG(t, "pose_multi_"+name+".png", final)
			t.Logf("checks %+v; %s", checks, note)
			// The other woman's head is not the subject's: one head.
			if i := slices.IndexFunc(checks, func(c pipelines.Check) bool { return c.Name == selfcheck.NameDuplicatedHead }); i < 0 || checks[i].Value != 0 {
				t.Errorf("no %s 0 in the checks", selfcheck.NameDuplicatedHead)
			}
			others := a.OthersMask()
			_, alpha := a.ConfineMoved(work, r.Image, r.Alpha)
			diff := 0
			for i, v := range others.Pix {
				if v != 0 && !samePixel(work.Pix[i*4:], final.Pix[i*4:]) {
					diff++
				}
			}
			if diff != 0 {
				t.Errorf("%d pixels of the other person changed", diff)
			}
			if ch := body.ChangedOutside(work, final, alpha, 0); ch >= 0.01 {
				t.Errorf("%.4f of the pixels outside the subject changed", ch)
			}
			if checks[0].Name != selfcheck.NameChangedOutside || !checks[0].Pass {
				t.Errorf("first check %+v", checks[0])
			}
			if !strings.HasPrefix(note, "subject: largest visible face") {
				t.Errorf("note %q", note)
			}
		})
	}
}

func samePixel(a, b []uint8) bool { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] }
