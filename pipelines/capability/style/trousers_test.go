package style

import (
	"context"
	"image"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// TestBlackTrousersKept: on fashn_garment.webp the pose model and the
// human parser both lose patches of the man's black trousers near the
// frame's bottom edge. The old two-model mask (selfie and pose averaged)
// left them at about one half, and the studio backdrop painted grey
// blotches over them that person_painted_over (then counting only pixels
// painted more than half) passed. The three-model mask with its held
// holes keeps the trousers, and the check now fails the old matte.
func TestBlackTrousersKept(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	img := pipelinetest.Image(t, "images/fashn_garment.webp")
	s, err := AnalyzeScene(ctx, p, img)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := s.Backdrop(); !ok {
		t.Fatalf("backdrop refused: %s", why)
	}
	sel, err := p.PersonMask(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	pose, err := p.Pose(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	src := raster.CopyRGBA(img)
	old := fuseMasks(b.Dx(), b.Dy(), sel, pose.Mask)
	trousers := darkLowerPerson(s.a, src)
	for _, tc := range []struct {
		name      string
		mask      *image.Gray
		maxOnLegs int
		minOnLegs int
		pass      bool
	}{
		// Measured: 14,229 of the 41,114 trouser pixels painted,
		// person_painted_over 0.0620 (0.0004 counting only pixels
		// painted more than half, as the check did).
		{"old two-model mask", old, 1 << 30, 10000, false},
		// Measured: 0 painted, person_painted_over 0.0008.
		{"three-model mask", s.mask, 50, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, matte := looks["studio"].apply(src, Options{Seed: 1, PersonMask: tc.mask})
			n, on := 0, 0
			for k, v := range trousers.Pix {
				if v >= 128 {
					n++
					if 1-matte[k] > paintedLevel {
						on++
					}
				}
			}
			v := paintedOver(s.a, matte, nil)
			t.Logf("%d of %d trouser pixels painted; person_painted_over %.4f", on, n, v)
			if on > tc.maxOnLegs || on < tc.minOnLegs {
				t.Errorf("%d trouser pixels painted, want %d..%d", on, tc.minOnLegs, tc.maxOnLegs)
			}
			if pass := v <= MaxPaintedOver; pass != tc.pass {
				t.Errorf("person_painted_over %.4f passes %v, want %v", v, pass, tc.pass)
			}
		})
	}
}

// darkLowerPerson is the subject's region less an inner margin of one
// blend band, in the frame's bottom fifth, where src is darker than a
// fifth of full scale: the black trousers of fashn_garment.webp.
func darkLowerPerson(a *body.Analysis, src *image.RGBA) *image.Gray {
	inner := mask.Erode(a.SubjectPerson().Region, a.Band())
	out := image.NewGray(inner.Rect)
	for y := a.H * 4 / 5; y < a.H; y++ {
		for x := 0; x < a.W; x++ {
			k := y*a.W + x
			px := src.Pix[y*src.Stride+x*4:]
			if inner.Pix[k] >= 128 && int(px[0])+int(px[1])+int(px[2]) < 3*51 {
				out.Pix[k] = 255
			}
		}
	}
	return out
}
