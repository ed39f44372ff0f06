package anglegeneration

import (
	"context"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/selfcheck"
)

// TestSeveralPeopleInPlace renders the subject of the two-person photos
// from other angles: the other woman's pixels are identical, less than 1%
// of the pixels outside the subject's old and new regions and band
// change, the frame keeps its size (no mirrored or re-framed neighbour),
// and the note names the subject.
func TestSeveralPeopleInPlace(t *testing.T) {
	p := New(pipelinetest.Perception(t))
	ctx := context.Background()
	for _, file := range []string{"pixabay_two_women_bikes.jpg", "pexels_two_women_phones.jpg"} {
		t.Run(file, func(t *testing.T) {
			r, err := p.Prepare(ctx, pipelinetest.Image(t, "images/"+file))
			if err != nil {
				t.Fatal(err)
			}
			if r.several == nil {
				t.Fatal("the photo was not seen as several people")
			}
			others := r.several.OthersMask()
			for _, id := range []string{Left45, Back} {
				v, err := r.Render(id, "1:1")
				if err != nil {
					t.Fatal(err)
				}
				pipelinetest.WritePNG(t, "angles_"+strings.TrimSuffix(file, ".jpg")+"_"+id+".png", v.Image)
				if v.Image.Rect != r.s.Image.Rect {
					t.Fatalf("%s: frame %v, want the photo's %v", id, v.Image.Rect, r.s.Image.Rect)
				}
				diff := 0
				for i, m := range others.Pix {
					o, e := r.s.Image.Pix[i*4:i*4+3], v.Image.Pix[i*4:i*4+3]
					if m != 0 && (o[0] != e[0] || o[1] != e[1] || o[2] != e[2]) {
						diff++
					}
				}
				if diff != 0 {
					t.Errorf("%s: %d pixels of the other person changed", id, diff)
				}
				ch := selfcheck.ChangedOutside(r.s.Image, v.Image, v.Confine)
				if !ch.Pass || bodypkg.ChangedOutside(r.s.Image, v.Image, v.Confine, 0) >= 0.01 {
					t.Errorf("%s: changed outside the subject %+v", id, ch)
				}
				if n := v.Notes[len(v.Notes)-1]; !strings.HasPrefix(n, "subject: largest visible face") {
					t.Errorf("%s: last note %q", id, n)
				}
				t.Logf("%s: %+v %+v", id, ch, selfcheck.Hole(r.s.Image, v.Image))
			}
		})
	}
}
