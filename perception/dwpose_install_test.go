package perception

import (
	"context"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/inference"
	"fashiond/internal/testenv"
)

// dwContract holds tiny graphs with DWPose's tensor signatures and closed
// forms (scripts/export/dwpose_contract.py): one person box centred at
// (213, 320) of 300×560 in the detector's 640×640 input, and SimCC peaks of
// 0.9 at bins (37k mod 500 + 40, 53k mod 700 + 30) for keypoints 5..10,
// 0.2 elsewhere. They are not DWPose.
var dwContract = filepath.Join("testdata", "dwpose-contract")

func TestInstallAndRunDWPoseContract(t *testing.T) {
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: testenv.ORTLib(), IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	models := t.TempDir()
	if d, err := OpenDWPose(ctx, rt, models, "cpu"); d != nil || err != nil {
		t.Fatalf("nothing installed: %v, %v", d, err)
	}
	if s := DWPoseStatus(ctx, models); !strings.HasPrefix(s, "not installed") {
		t.Errorf("status before install: %s", s)
	}
	rec, err := InstallDWPose(ctx, rt, dwContract, models)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Files[FileYOLOX]) != 64 || len(rec.Files[FileDWPose]) != 64 {
		t.Fatalf("record %+v", rec)
	}
	d, err := OpenDWPose(ctx, rt, models, "cpu")
	if err != nil || d == nil {
		t.Fatalf("open: %v", err)
	}
	if s := DWPoseStatus(ctx, models); !strings.HasPrefix(s, "verified") {
		t.Errorf("status after install: %s", s)
	}
	defer d.Close()
	const W, H = 200, 300
	p, err := d.Detect(ctx, image.NewGray(image.Rect(0, 0, W, H)))
	if err != nil {
		t.Fatal(err)
	}
	r := float64(float32(math.Min(640.0/H, 640.0/W)))
	box := [4]float64{63 / r, 40 / r, 363 / r, 600 / r}
	center, scale := dwCenterScale(box, dwPoseInW, dwPoseInH)
	mm := func(k int) [2]float64 {
		bx, by := float64((37*k)%500+40), float64((53*k)%700+30)
		return [2]float64{(bx/2/dwPoseInW*scale[0] + center[0] - scale[0]/2) / W, (by/2/dwPoseInH*scale[1] + center[1] - scale[1]/2) / H}
	}
	// OpenPose point ← mmpose keypoint for the strong ones; the neck (1)
	// is the shoulders' mean.
	want := map[int][2]float64{2: mm(6), 3: mm(8), 4: mm(10), 5: mm(5), 6: mm(7), 7: mm(9)}
	want[1] = [2]float64{(mm(5)[0] + mm(6)[0]) / 2, (mm(5)[1] + mm(6)[1]) / 2}
	for j, s := range p.Subset[0] {
		q, strong := want[j]
		if strong != (s >= 0) {
			t.Fatalf("point %d: subset %v, want visible=%v", j, s, strong)
		}
		if strong && (math.Abs(p.Candidate[j][0]-q[0]) > 1e-4 || math.Abs(p.Candidate[j][1]-q[1]) > 1e-4) {
			t.Errorf("point %d at %v, want %v", j, p.Candidate[j], q)
		}
	}
	if len(p.Hands) != 2 || len(p.Faces) != 1 || p.Hands[0][0] != [2]float64{-1, -1} {
		t.Errorf("hands %d faces %d first hand point %v (all hidden at 0.2)", len(p.Hands), len(p.Faces), p.Hands[0][0])
	}
	// A changed file is refused when opened.
	f := filepath.Join(models, DWPoseDir, FileYOLOX)
	if err := os.WriteFile(f, append(mustRead(t, f), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDWPose(ctx, rt, models, "cpu"); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("tampered file: %v", err)
	}
	if s := DWPoseStatus(ctx, models); !strings.Contains(s, FileYOLOX) || !strings.Contains(s, "sha256") {
		t.Errorf("status after tampering: %s", s)
	}
	if _, err := InstallDWPose(ctx, rt, t.TempDir(), models); err == nil || !strings.Contains(err.Error(), FileYOLOX) {
		t.Fatalf("empty folder: %v", err)
	}
	// The detector in the pose model's place is refused naming the file.
	swapped := t.TempDir()
	for _, f := range []string{FileYOLOX, FileDWPose} {
		if err := os.WriteFile(filepath.Join(swapped, f), mustRead(t, filepath.Join(dwContract, FileYOLOX)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := InstallDWPose(ctx, rt, swapped, t.TempDir()); err == nil || !strings.Contains(err.Error(), FileDWPose) {
		t.Fatalf("a detector as the pose model: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
