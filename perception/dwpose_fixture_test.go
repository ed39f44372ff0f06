package perception

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"fashiond/internal/testenv"
)

// Fixtures written by FASHN VTON's own dwpose code (scripts/export/
// fashn_parity.py in the reference environment, OpenCV 4.10):
// ../diffusion/testdata/fashn/pose.* (Wholebody + DWposeDetector on fixed
// SimCC outputs and boxes, draw_pose) and detector.* (YOLOX decoding).
var fashnFixtures = filepath.Join("..", "diffusion", "testdata", "fashn")

type fixtureIndex map[string]struct {
	Offset int   `json:"offset"`
	Shape  []int `json:"shape"`
}

type poseJSON struct {
	Candidate [][]float64   `json:"candidate"`
	Subset    [][]float64   `json:"subset"`
	Hands     [][][]float64 `json:"hands"`
	Faces     [][][]float64 `json:"faces"`
	Keypoints [][][]float64 `json:"keypoints"`
	Scores    [][]float64   `json:"scores"`
}

func (p poseJSON) dict() PoseDict {
	pts := func(v [][]float64) [][2]float64 {
		out := make([][2]float64, len(v))
		for i, q := range v {
			out[i] = [2]float64{q[0], q[1]}
		}
		return out
	}
	d := PoseDict{Candidate: pts(p.Candidate), Subset: p.Subset}
	for _, h := range p.Hands {
		d.Hands = append(d.Hands, pts(h))
	}
	for _, f := range p.Faces {
		d.Faces = append(d.Faces, pts(f))
	}
	return d
}

func readF32(t *testing.T, path string, gz bool) []float32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func readPNGGray(t *testing.T, path string) *image.Gray {
	t.Helper()
	img := testenv.ReadPNG(t, path)
	g, ok := img.(*image.Gray)
	if !ok {
		t.Fatalf("%s is %T, want a grey PNG", path, img)
	}
	return g
}

// comparePoseMap counts the pixels of the drawn map that differ from the
// reference's; draw_pose is integer rasterisation, so any is a failure.
func comparePoseMap(t *testing.T, name string, got, want *image.Gray) {
	t.Helper()
	if got.Rect.Size() != want.Rect.Size() {
		t.Fatalf("%s: size %v, reference %v", name, got.Rect.Size(), want.Rect.Size())
	}
	bad, first := 0, image.Point{-1, -1}
	w := got.Rect.Dx()
	for y := range got.Rect.Dy() {
		for x := range w {
			if got.Pix[y*got.Stride+x] != want.Pix[y*want.Stride+x] {
				if bad == 0 {
					first = image.Pt(x, y)
				}
				bad++
			}
		}
	}
	t.Logf("%s: %d of %d pixels differ from the reference's draw_pose", name, bad, w*got.Rect.Dy())
	if bad > 0 {
		t.Errorf("%s: %d pixels differ, first at %v (got %d, reference %d)", name, bad, first,
			got.Pix[first.Y*got.Stride+first.X], want.Pix[first.Y*want.Stride+first.X])
	}
}

func TestPoseMapsMatchReference(t *testing.T) {
	var meta struct {
		Detected poseJSON     `json:"detected"`
		Manual   poseJSON     `json:"manual"`
		Width    int          `json:"width"`
		Height   int          `json:"height"`
		Boxes    [][4]float64 `json:"boxes"`
		Manual2  [2]int       `json:"manual_size"`
		Flat     [2]int       `json:"flatlay_size"`
		Arrays   fixtureIndex `json:"arrays"`
	}
	raw, err := os.ReadFile(filepath.Join(fashnFixtures, "pose.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	g, err := DrawPoseGray(meta.Manual.dict(), meta.Manual2[0], meta.Manual2[1])
	if err != nil {
		t.Fatal(err)
	}
	comparePoseMap(t, "hand-made pose", g, readPNGGray(t, filepath.Join(fashnFixtures, "pose-manual.png")))
	g, err = DrawPoseGray(DummyPose(), meta.Flat[0], meta.Flat[1])
	if err != nil {
		t.Fatal(err)
	}
	comparePoseMap(t, "flat-lay dummy", g, readPNGGray(t, filepath.Join(fashnFixtures, "pose-flatlay.png")))

	// From the pose model's SimCC outputs to the pose dictionary.
	data := readF32(t, filepath.Join(fashnFixtures, "pose.f32"), false)
	arr := func(name string) []float32 {
		a := meta.Arrays[name]
		n := 1
		for _, d := range a.Shape {
			n *= d
		}
		return data[a.Offset : a.Offset+n]
	}
	var kps [][][2]float64
	var scs [][]float64
	for i, box := range meta.Boxes {
		center, scale := dwCenterScale(box, dwPoseInW, dwPoseInH)
		sfx := []string{"0", "1"}[i]
		kp, sc, err := simccDecode(arr("simcc_x/"+sfx), arr("simcc_y/"+sfx), dwWholeBodyKeys, dwPoseInW*2, dwPoseInH*2, dwPoseInW, dwPoseInH, center, scale)
		if err != nil {
			t.Fatal(err)
		}
		kp, sc = mmposeToOpenPose(kp, sc)
		for k := range kp {
			want := meta.Detected.Keypoints[i][k]
			if math.Abs(kp[k][0]-want[0]) > 1e-9 || math.Abs(kp[k][1]-want[1]) > 1e-9 || math.Abs(sc[k]-meta.Detected.Scores[i][k]) > 1e-6 {
				t.Fatalf("person %d keypoint %d: %v score %v, reference %v score %v", i, k, kp[k], sc[k], want, meta.Detected.Scores[i][k])
			}
		}
		kps, scs = append(kps, kp), append(scs, sc)
	}
	d := dwPoseDict(kps, scs, meta.Width, meta.Height)
	ref := meta.Detected.dict()
	if len(d.Candidate) != len(ref.Candidate) || len(d.Hands) != len(ref.Hands) || len(d.Faces) != len(ref.Faces) {
		t.Fatalf("pose dict sizes %d/%d/%d, reference %d/%d/%d", len(d.Candidate), len(d.Hands), len(d.Faces), len(ref.Candidate), len(ref.Hands), len(ref.Faces))
	}
	for j := range d.Subset[0] {
		if d.Subset[0][j] != ref.Subset[0][j] || d.Candidate[j] != ref.Candidate[j] {
			t.Fatalf("body point %d: %v (subset %v), reference %v (%v)", j, d.Candidate[j], d.Subset[0][j], ref.Candidate[j], ref.Subset[0][j])
		}
	}
	for h := range d.Hands {
		for k := range d.Hands[h] {
			if d.Hands[h][k] != ref.Hands[h][k] {
				t.Fatalf("hand %d point %d: %v, reference %v", h, k, d.Hands[h][k], ref.Hands[h][k])
			}
		}
	}
	g, err = DrawPoseGray(d, meta.Width, meta.Height)
	if err != nil {
		t.Fatal(err)
	}
	comparePoseMap(t, "detected pose", g, readPNGGray(t, filepath.Join(fashnFixtures, "pose-detected.png")))
}

func TestYOLOXDecodeMatchesReference(t *testing.T) {
	var meta struct {
		Ratio  float64      `json:"ratio"`
		Arrays fixtureIndex `json:"arrays"`
	}
	raw, err := os.ReadFile(filepath.Join(fashnFixtures, "detector.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	data := readF32(t, filepath.Join(fashnFixtures, "detector.f32.gz"), true)
	a, b := meta.Arrays["raw"], meta.Arrays["boxes"]
	rawOut := data[a.Offset : a.Offset+a.Shape[0]*a.Shape[1]]
	want := data[b.Offset : b.Offset+b.Shape[0]*b.Shape[1]]
	got, err := yoloxPersons(rawOut, float32(meta.Ratio))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != b.Shape[0] {
		t.Fatalf("%d person boxes, reference %d", len(got), b.Shape[0])
	}
	worst := 0.0
	for i, bx := range got {
		for k := range 4 {
			worst = math.Max(worst, math.Abs(float64(bx[k]-want[i*4+k])))
		}
	}
	t.Logf("%d person boxes, max |diff| %.3g px", len(got), worst)
	if worst > 1e-3 {
		t.Errorf("boxes differ from the reference by %g px", worst)
	}
}
