package repose

import (
	"context"
	"image"
	"sync"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
)

// writePNG writes a PNG under FASHIOND_TEST_OUT for looking at (nothing
// when it is unset).
func writePNG(t testing.TB, name string, img image.Image) {
	t.Helper()
	pipelinetest.WritePNG(t, name, img)
}

var (
	sceneMu    sync.Mutex
	sceneCache = map[string]*scene.Scene{}
)

// testScene returns the (cached) layers of a test image at working size.
func testScene(t testing.TB, p perception.Perception, rel string) *scene.Scene {
	t.Helper()
	sceneMu.Lock()
	defer sceneMu.Unlock()
	if s, ok := sceneCache[rel]; ok {
		return s
	}
	img := FitPixels(pipelinetest.Image(t, rel), MaxWorkPixels)
	s, err := scene.Layers(context.Background(), p, img, scene.Options{})
	if err != nil {
		t.Fatalf("layers of %s: %v", rel, err)
	}
	sceneCache[rel] = s
	return s
}

// reposeText re-poses the (cached) scene of a test image to a pose text.
func reposeText(t testing.TB, p perception.Perception, rel, text string) (*scene.Scene, *Rendered) {
	t.Helper()
	s := testScene(t, p, rel)
	target, err := TargetFromText(text, s.Pose)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReposeDetail(context.Background(), p, s, target)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// measured runs the pose model on an output and returns its skeleton.
func measured(t testing.TB, p perception.Perception, img image.Image) Skeleton {
	t.Helper()
	pose, err := p.Pose(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	return SkeletonFromPose(pose, b.Dx(), b.Dy())
}

// drawSkeleton overlays a skeleton's limbs (for looking at results).
func drawSkeleton(img image.Image, s Skeleton, c [3]uint8) *image.RGBA {
	out := raster.RGBA(img)
	cp := image.NewRGBA(out.Rect)
	copy(cp.Pix, out.Pix)
	bones := [][2]int{{11, 12}, {11, 13}, {13, 15}, {12, 14}, {14, 16}, {11, 23}, {12, 24}, {23, 24}, {23, 25}, {25, 27}, {24, 26}, {26, 28}, {0, 7}, {0, 8}}
	w, h := cp.Rect.Dx(), cp.Rect.Dy()
	for _, b := range bones {
		p, q := s.Joints[b[0]], s.Joints[b[1]]
		n := int(norm(sub(q, p))) + 1
		for k := 0; k <= n; k++ {
			f := float64(k) / float64(n)
			x, y := int(p.X+(q.X-p.X)*f), int(p.Y+(q.Y-p.Y)*f)
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					if x+dx >= 0 && y+dy >= 0 && x+dx < w && y+dy < h {
						o := (y+dy)*cp.Stride + (x+dx)*4
						cp.Pix[o], cp.Pix[o+1], cp.Pix[o+2] = c[0], c[1], c[2]
					}
				}
			}
		}
	}
	return cp
}
