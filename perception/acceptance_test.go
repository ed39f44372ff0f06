package perception_test

import (
	"context"
	"encoding/json"
	"image"
	"math"
	"os"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
)

type gtPerson struct {
	Image     string       `json:"image"`
	Width     int          `json:"width"`
	Height    int          `json:"height"`
	Keypoints [][3]float64 `json:"keypoints"`
	Selfie    [4]float64   `json:"selfie_bbox_xyxy"`
	Person    [4]float64   `json:"person_bbox_xyxy"`
	PoseFlag  float64      `json:"pose_flag"`
}

type gtGarment struct {
	File       string     `json:"file"`
	Source     string     `json:"source"`
	Kind       string     `json:"kind"`
	BBox       [4]float64 `json:"bbox_xyxy"`
	SourceBBox [4]float64 `json:"source_bbox_xyxy"`
}

type groundTruth struct {
	People   []gtPerson  `json:"people"`
	Garments []gtGarment `json:"garments"`
}

func loadGT(t testing.TB) groundTruth {
	t.Helper()
	b, err := os.ReadFile(pipelinetest.File(t, "GROUND_TRUTH.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gt groundTruth
	if err := json.Unmarshal(b, &gt); err != nil {
		t.Fatal(err)
	}
	if len(gt.People) == 0 {
		t.Fatal("no people in GROUND_TRUTH.json")
	}
	return gt
}

func person(t testing.TB, gt groundTruth, img string) gtPerson {
	for _, p := range gt.People {
		if p.Image == img {
			return p
		}
	}
	t.Fatalf("%s not in ground truth", img)
	return gtPerson{}
}

// maskBBox is the bounding box of mask pixels >= 128 (x1, y1 exclusive).
func maskBBox(m *image.Gray) (box [4]float64, n int) {
	x0, y0, x1, y1 := math.MaxInt, math.MaxInt, -1, -1
	b := m.Bounds()
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			if m.Pix[y*m.Stride+x] >= 128 {
				n++
				x0, y0 = min(x0, x), min(y0, y)
				x1, y1 = max(x1, x), max(y1, y)
			}
		}
	}
	return [4]float64{float64(x0), float64(y0), float64(x1 + 1), float64(y1 + 1)}, n
}

func TestPoseMatchesGroundTruth(t *testing.T) {
	p := pipelinetest.Perception(t)
	gt := loadGT(t)
	// Joints the ground-truth notes trust: on the full-body photo nose,
	// shoulders and hips; on the astronaut only the face (the shoulders sit
	// on the suit ring and the hips are out of frame in both references).
	cases := []struct {
		img    string
		joints []int
	}{
		{"images/fashn_model.webp", []int{perception.KpNose, perception.KpLeftShoulder, perception.KpRightShoulder, perception.KpLeftHip, perception.KpRightHip}},
		{"images/astronaut.png", []int{perception.KpNose, perception.KpLeftEye, perception.KpRightEye, perception.KpLeftShoulder, perception.KpRightShoulder}},
	}
	for _, c := range cases {
		t.Run(c.img, func(t *testing.T) {
			ref := person(t, gt, c.img)
			img := pipelinetest.Image(t, c.img)
			pose, err := p.Pose(context.Background(), img)
			if err != nil {
				t.Fatal(err)
			}
			diag := math.Hypot(float64(ref.Width), float64(ref.Height))
			for _, j := range c.joints {
				k := pose.Keypoints[j]
				d := math.Hypot(k.X-ref.Keypoints[j][0], k.Y-ref.Keypoints[j][1])
				t.Logf("joint %d: got (%.1f,%.1f) want (%.1f,%.1f) off %.1f px (%.2f%%)", j, k.X, k.Y, ref.Keypoints[j][0], ref.Keypoints[j][1], d, 100*d/diag)
				if d > 0.03*diag {
					t.Errorf("joint %d off by %.1f px (> 3%% of diagonal %.0f)", j, d, diag)
				}
				if k.Visibility < 0.5 {
					t.Errorf("joint %d visibility %.2f", j, k.Visibility)
				}
			}
			if pose.Presence < 0.5 {
				t.Errorf("person presence %.2f", pose.Presence)
			}
			if b := pose.Mask.Bounds(); b.Dx() != ref.Width || b.Dy() != ref.Height {
				t.Fatalf("pose mask %v, want %dx%d", b, ref.Width, ref.Height)
			}
			box, n := maskBBox(pose.Mask)
			if n < ref.Width*ref.Height/10 {
				t.Errorf("pose mask covers only %d px", n)
			}
			t.Logf("pose mask bbox %v", box)
		})
	}
}

func TestPersonMaskBBox(t *testing.T) {
	p := pipelinetest.Perception(t)
	gt := loadGT(t)
	for _, ref := range gt.People {
		t.Run(ref.Image, func(t *testing.T) {
			img := pipelinetest.Image(t, ref.Image)
			m, err := p.PersonMask(context.Background(), img)
			if err != nil {
				t.Fatal(err)
			}
			if b := m.Bounds(); b.Dx() != ref.Width || b.Dy() != ref.Height {
				t.Fatalf("mask %v, want %dx%d", b, ref.Width, ref.Height)
			}
			box, _ := maskBBox(m)
			diag := math.Hypot(float64(ref.Width), float64(ref.Height))
			for i := range box {
				d := math.Abs(box[i] - ref.Person[i])
				t.Logf("edge %d: got %.0f want %.0f", i, box[i], ref.Person[i])
				if d > 0.05*diag {
					t.Errorf("bbox edge %d: got %.0f want %.0f (off %.0f > 5%% of diagonal)", i, box[i], ref.Person[i], d)
				}
			}
		})
	}
}

func TestParseClothesCoverGarment(t *testing.T) {
	p := pipelinetest.Perception(t)
	gt := loadGT(t)
	// The worn garment with a ground-truth box: the ghost tee was cut out of
	// fashn_garment.webp, its source_bbox_xyxy is the tee in that photo.
	var g gtGarment
	for _, x := range gt.Garments {
		if x.Source != "" {
			g = x
		}
	}
	if g.Source == "" {
		t.Fatal("no worn garment in ground truth")
	}
	img := pipelinetest.Image(t, "images/"+g.Source)
	par, err := p.Parse(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	for _, m := range []*image.Gray{par.Skin, par.Clothes, par.Hair} {
		if m.Bounds().Dx() != b.Dx() || m.Bounds().Dy() != b.Dy() {
			t.Fatalf("mask %v, want %v", m.Bounds(), b)
		}
	}
	box, n := maskBBox(par.Clothes)
	gb := g.SourceBBox
	ix := math.Min(box[2], gb[2]) - math.Max(box[0], gb[0])
	iy := math.Min(box[3], gb[3]) - math.Max(box[1], gb[1])
	cover := math.Max(0, ix) * math.Max(0, iy) / ((gb[2] - gb[0]) * (gb[3] - gb[1]))
	t.Logf("clothes bbox %v (%d px), garment bbox %v, coverage %.2f", box, n, gb, cover)
	if cover < 0.8 {
		t.Errorf("clothes mask bbox covers %.0f%% of the garment box, want >= 80%%", 100*cover)
	}
	// Inside the garment box most pixels are clothes; the face is skin.
	in := 0
	for y := int(gb[1]); y < int(gb[3]); y++ {
		for x := int(gb[0]); x < int(gb[2]); x++ {
			if par.Clothes.GrayAt(x, y).Y >= 128 {
				in++
			}
		}
	}
	frac := float64(in) / ((gb[2] - gb[0]) * (gb[3] - gb[1]))
	t.Logf("clothes fraction inside the garment box %.2f", frac)
	if frac < 0.5 {
		t.Errorf("only %.0f%% of the garment box is clothes", 100*frac)
	}
}

func TestFacesFound(t *testing.T) {
	p := pipelinetest.Perception(t)
	gt := loadGT(t)
	for _, name := range []string{"images/gocv_face.jpg", "images/astronaut.png", "images/fashn_model.webp", "images/fashn_garment.webp"} {
		t.Run(name, func(t *testing.T) {
			img := pipelinetest.Image(t, name)
			faces, err := p.Faces(context.Background(), img)
			if err != nil {
				t.Fatal(err)
			}
			if len(faces) == 0 {
				t.Fatal("no face found")
			}
			f := faces[0]
			t.Logf("%d faces; best %+v", len(faces), f)
			if f.Source != perception.ModelYuNet || f.LandmarksEstimated {
				t.Errorf("best face from %s (estimated landmarks %v), want yunet", f.Source, f.LandmarksEstimated)
			}
			for i, l := range f.Landmarks {
				if l.X < f.Box[0] || l.X > f.Box[2] || l.Y < f.Box[1] || l.Y > f.Box[3] {
					t.Errorf("landmark %d %v outside box %v", i, l, f.Box)
				}
			}
			// Where the pose reference has a nose, it is inside the face box.
			for _, ref := range gt.People {
				if ref.Image == name {
					nx, ny := ref.Keypoints[perception.KpNose][0], ref.Keypoints[perception.KpNose][1]
					if nx < f.Box[0] || nx > f.Box[2] || ny < f.Box[1] || ny > f.Box[3] {
						t.Errorf("reference nose (%.0f,%.0f) outside face box %v", nx, ny, f.Box)
					}
				}
			}
		})
	}
}
