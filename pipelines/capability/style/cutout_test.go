package style

import (
	"context"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
)

// TestStudioBackdropOnCutout: on codait_man_tpose_cutout.png (RGBA, the
// background transparent, black in premultiplied pixels) the studio
// backdrop left a dark wedge between the legs, where the person mask took
// the black gap for the person (issue 21's third pass, product-to-model
// with the photo as modelImageUrl; every check passed). A transparent
// pixel is never the person: none of them may stay dark (every channel
// below 60) under the backdrop. Before the rule: 5,481 such pixels.
func TestStudioBackdropOnCutout(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	img := raster.RGBA(pipelinetest.Image(t, "images/codait_man_tpose_cutout.png"))
	s, err := AnalyzeScene(ctx, p, img)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := s.Backdrop(); !ok {
		t.Fatalf("no backdrop: %s", why)
	}
	st, err := ApplyScene(ctx, p, img, "studio", 1, s)
	if err != nil {
		t.Fatal(err)
	}
	pipelinetest.WritePNG(t, "style_studio_cutout.png", st.Image)
	dark := 0
	for i := 0; i < len(img.Pix); i += 4 {
		o := st.Image.Pix[i : i+3]
		if img.Pix[i+3] == 0 && max(o[0], o[1], o[2]) < 60 {
			dark++
		}
	}
	t.Logf("transparent pixels left dark under the backdrop: %d", dark)
	if dark != 0 {
		t.Errorf("%d transparent pixels left dark under the backdrop, want 0", dark)
	}
}
