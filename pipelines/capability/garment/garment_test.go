package garment

import (
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/mask"
)

type gtGarment struct {
	File      string                `json:"file"`
	Kind      string                `json:"kind"`
	Dominant  [3]uint8              `json:"dominant_color_rgb"`
	BBox      [4]int                `json:"bbox_xyxy"`
	Pixels    int                   `json:"garment_pixel_count"`
	Keypoints map[string][2]float64 `json:"keypoints"`
}

func loadGT(t testing.TB) []gtGarment {
	b, err := os.ReadFile(pipelinetest.File(t, "GROUND_TRUTH.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gt struct {
		Garments []gtGarment `json:"garments"`
	}
	if err := json.Unmarshal(b, &gt); err != nil {
		t.Fatal(err)
	}
	return gt.Garments
}

func iou(a, b image.Rectangle) float64 {
	in := a.Intersect(b)
	ai := float64(in.Dx() * in.Dy())
	return ai / float64(a.Dx()*a.Dy()+b.Dx()*b.Dy()-in.Dx()*in.Dy())
}

// TestAnalyzeGroundTruth checks every garment of the test data against its
// ground truth: kind, dominant colour (CIEDE2000 <= 5), bounding box IoU >=
// 0.95, pixel count within 4%, and the procedural flat-lays' keypoints within
// 4% of the garment's bbox diagonal.
func TestAnalyzeGroundTruth(t *testing.T) {
	dbg := os.Getenv("GARMENT_DEBUG")
	for _, gt := range loadGT(t) {
		t.Run(filepath.Base(gt.File), func(t *testing.T) {
			img := pipelinetest.Image(t, gt.File)
			g, err := Analyze(context.Background(), nil, img)
			if err != nil {
				t.Fatal(err)
			}
			if g.Kind != gt.Kind {
				t.Errorf("kind %q, want %q", g.Kind, gt.Kind)
			}
			want := color.RGBA{gt.Dominant[0], gt.Dominant[1], gt.Dominant[2], 255}
			if de := DeltaE2000(g.Dominant, want); de > 5 {
				t.Errorf("dominant %v, want %v (dE2000 %.1f)", g.Dominant, want, de)
			}
			gb := image.Rect(gt.BBox[0], gt.BBox[1], gt.BBox[2], gt.BBox[3])
			if v := iou(g.BBox, gb); v < 0.95 {
				t.Errorf("bbox %v vs %v: IoU %.3f < 0.95", g.BBox, gb, v)
			}
			if n := mask.Count(g.Mask); math.Abs(float64(n-gt.Pixels)) > 0.04*float64(gt.Pixels) {
				t.Errorf("mask has %d px, want %d ±4%%", n, gt.Pixels)
			}
			diag := math.Hypot(float64(gb.Dx()), float64(gb.Dy()))
			for name, p := range gt.Keypoints {
				got, ok := g.Landmarks[name]
				if !ok {
					t.Errorf("landmark %s missing", name)
					continue
				}
				if d := math.Hypot(got.X-p[0], got.Y-p[1]); d > 0.04*diag {
					t.Errorf("%s at (%.0f,%.0f), want (%.0f,%.0f): off %.0f px > %.0f", name, got.X, got.Y, p[0], p[1], d, 0.04*diag)
				} else if dbg != "" {
					t.Logf("%s off %.1f px (%.1f%% diag)", name, d, 100*d/diag)
				}
			}
			if dbg != "" {
				writeDebug(t, dbg, filepath.Base(gt.File), g)
			}
		})
	}
}

func writeDebug(t *testing.T, dir, name string, g *Garment) {
	out := image.NewRGBA(g.Cutout.Rect)
	for i := 0; i < len(out.Pix); i += 4 {
		a := int(g.Cutout.Pix[i+3])
		for c := 0; c < 3; c++ {
			out.Pix[i+c] = uint8((int(g.Cutout.Pix[i+c])*a + 128*(255-a)) / 255)
		}
		out.Pix[i+3] = 255
	}
	for _, p := range g.Landmarks {
		for dy := -5; dy <= 5; dy++ {
			for dx := -5; dx <= 5; dx++ {
				out.Set(int(p.X)+dx, int(p.Y)+dy, color.RGBA{255, 0, 255, 255})
			}
		}
	}
	f, err := os.Create(filepath.Join(dir, "garment_"+name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	png.Encode(f, out)
}

func TestAnalyzeWorn(t *testing.T) {
	p := pipelinetest.Perception(t)
	img := pipelinetest.Image(t, "images/fashn_garment.webp")
	g, err := Analyze(context.Background(), p, img)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Worn || g.Kind != KindTop {
		t.Fatalf("worn %v kind %s, want a worn top", g.Worn, g.Kind)
	}
	if de := DeltaE2000(g.Dominant, color.RGBA{20, 20, 19, 255}); de > 8 {
		t.Errorf("dominant %v: CIEDE2000 %.1f to the tee's black", g.Dominant, de)
	}
	faces, err := p.Faces(context.Background(), img)
	if err != nil || len(faces) == 0 {
		t.Fatal("no face", err)
	}
	if float64(g.BBox.Min.Y) < faces[0].Box[3]-5 {
		t.Errorf("garment box %v reaches above the chin (%.0f)", g.BBox, faces[0].Box[3])
	}
	// GT: the tee's box in the source photo.
	if v := iou(g.BBox, image.Rect(60, 290, 536, 716)); v < 0.7 {
		t.Errorf("garment box %v vs the tee's %v: IoU %.2f < 0.7", g.BBox, image.Rect(60, 290, 536, 716), v)
	}
	for _, n := range []string{"left_shoulder", "right_shoulder", "left_sleeve_end", "right_sleeve_end", "left_hem", "right_hem", "collar_center"} {
		q, ok := g.Landmarks[n]
		if !ok || !g.BBox.Inset(-10).Overlaps(image.Rect(int(q.X), int(q.Y), int(q.X)+1, int(q.Y)+1)) {
			t.Errorf("landmark %s %v missing or outside the garment", n, q)
		}
	}
	if dir := os.Getenv("GARMENT_DEBUG"); dir != "" {
		writeDebug(t, dir, "worn.png", g)
	}
}
