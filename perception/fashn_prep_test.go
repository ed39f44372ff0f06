package perception

import (
	"image"
	"math"
	"path/filepath"
	"testing"

	"fashiond/internal/testenv"
)

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	return testenv.ReadPNG(t, path)
}

// unscale maps a [-1, 1] plane value back to its byte.
func unscale(v float32) int { return int(math.Round(float64((v + 1) * 127.5))) }

// TestResizePadMatchesReference: FASHN's ResizePad to 576×864 as the
// reference calls it (fixtures from its own class with OpenCV 4.10). Pose
// maps (nearest exact, enlarged ×2.98, black bars) and shrunk photos
// (INTER_AREA, ×0.8, on sharp colour blocks) must be equal pixel for pixel.
func TestResizePadMatchesReference(t *testing.T) {
	const tw, th = 576, 864
	pose := readPNGGray(t, filepath.Join(fashnFixtures, "pose-manual.png"))
	want := readPNGGray(t, filepath.Join(fashnFixtures, "resize-pose.png"))
	got := FashnPoseMap(pose, tw, th)
	bad := 0
	for i, v := range got {
		if unscale(v) != int(want.Pix[i]) {
			bad++
		}
	}
	t.Logf("pose map: %d of %d pixels differ from ResizePad(INTER_NEAREST_EXACT)", bad, len(got))
	if bad != 0 {
		t.Errorf("pose map: %d pixels differ", bad)
	}
	photo := readPNG(t, filepath.Join(fashnFixtures, "resize-photo-in.png"))
	ref := readPNG(t, filepath.Join(fashnFixtures, "resize-photo.png"))
	planes, fit := FashnRGB(photo, tw, th)
	if fit.W != 576 || fit.H != 768 || fit.Top != 48 || fit.Bottom != 48 {
		t.Fatalf("fit %+v, want 576x768 with 48-pixel bars", fit)
	}
	n := tw * th
	var sum, worst float64
	for y := range th {
		for x := range tw {
			r, g, b, _ := ref.At(x, y).RGBA()
			for k, w := range []uint32{r >> 8, g >> 8, b >> 8} {
				d := math.Abs(float64(unscale(planes[k*n+y*tw+x]) - int(w)))
				sum += d
				worst = math.Max(worst, d)
				if (y < fit.Top || y >= th-fit.Bottom) && d != 0 {
					t.Fatalf("padding at (%d,%d) channel %d differs", x, y, k)
				}
			}
		}
	}
	t.Logf("photo (block pattern, shrunk ×0.8): mean |diff| %.2f, max %.0f grey levels vs cv2 INTER_AREA", sum/float64(3*n), worst)
	if worst != 0 {
		t.Errorf("photo differs from the reference's INTER_AREA by up to %.0f levels", worst)
	}
}

// TestPreResizeMatchesPillow: the pipeline's pre-resize (PIL LANCZOS, fit
// 864×864) of the block pattern, 720×960 → 648×864, equal to Pillow's.
func TestPreResizeMatchesPillow(t *testing.T) {
	in := readPNG(t, filepath.Join(fashnFixtures, "resize-photo-in.png"))
	want := readPNG(t, filepath.Join(fashnFixtures, "resize-pre.png"))
	w, h := fashnPreSize(in.Bounds().Dx(), in.Bounds().Dy(), 864)
	if w != 648 || h != 864 || want.Bounds().Dx() != w || want.Bounds().Dy() != h {
		t.Fatalf("pre-resize %dx%d, reference %v", w, h, want.Bounds().Size())
	}
	got := resizePILLanczos(in, w, h)
	bad, worst := 0, 0
	for y := range h {
		for x := range w {
			r, g, b, _ := want.At(x, y).RGBA()
			for k, v := range []uint32{r >> 8, g >> 8, b >> 8} {
				if d := int(got.Pix[y*got.Stride+4*x+k]) - int(v); d != 0 {
					bad++
					worst = max(worst, d, -d)
				}
			}
		}
	}
	t.Logf("pre-resize: %d of %d values differ from Pillow's LANCZOS (max %d)", bad, 3*w*h, worst)
	if bad != 0 {
		t.Errorf("%d values differ from Pillow's (max %d levels)", bad, worst)
	}
}
