package repose

import (
	"context"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
)

// TestPoseAgreementFailsOnUnmovedPerson: the untouched source photo
// measured against an "arms raised" target disagrees on every moved bone,
// so the check fails; the target against itself (a re-posing that did
// what was asked) passes.
func TestPoseAgreementFailsOnUnmovedPerson(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	sc := testScene(t, p, "images/fashn_model.webp")
	src := AllKnown(SkeletonFromPose(sc.Pose, sc.Image.Rect.Dx(), sc.Image.Rect.Dy()))
	tg, err := TargetFromText("arms raised", sc.Pose)
	if err != nil {
		t.Fatal(err)
	}
	target := Retarget(tg, src)
	c, err := PoseAgreement(ctx, p, sc.Image, nil, 0, src, target)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != NamePoseAgreement || c.Pass || c.Value > 0.25 {
		t.Fatalf("unmoved photo: %+v, want %s failing at <= 0.25", c, NamePoseAgreement)
	}
	c, err = PoseAgreement(ctx, p, sc.Image, nil, 0, src, src)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Pass || c.Value != 1 {
		t.Fatalf("identity target: %+v, want 1", c)
	}
}

// TestAgreement: synthetic skeletons (left arm 11-13-15 only).
func TestAgreement(t *testing.T) {
	pt := func(x, y float64) perception.Point { return perception.Point{X: x, Y: y} }
	sk := func(elbow, wrist perception.Point, known bool) Skeleton {
		var s Skeleton
		for i := range s.Joints {
			s.Joints[i] = pt(50, 50)
			s.Known[i] = known
		}
		s.Joints[11], s.Joints[13], s.Joints[15] = pt(50, 50), elbow, wrist
		return s
	}
	source := sk(pt(50, 70), pt(50, 90), true)   // arm down
	target := sk(pt(50, 30), pt(50, 10), true)   // arm raised
	raised := sk(pt(53, 30), pt(56, 11), true)   // within a few degrees
	sideways := sk(pt(70, 50), pt(90, 50), true) // 90 degrees off
	cases := []struct {
		name   string
		got    Skeleton
		want   float64
		n      int
		missed string
	}{
		{"did it", raised, 1, 2, ""},
		{"other pose", sideways, 0, 2, "left upper arm,left forearm"},
		{"not found", sk(pt(50, 30), pt(50, 10), false), 0, 2, "left upper arm,left forearm"},
		{"forearm only", sk(pt(53, 30), pt(70, 30), true), 0.5, 2, "left forearm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, n, missed := agreementMissed(c.got, source, target, 100, 100)
			if v != c.want || n != c.n || strings.Join(missed, ",") != c.missed {
				t.Errorf("agreement = %.2f over %d missing %q, want %.2f over %d missing %q", v, n, missed, c.want, c.n, c.missed)
			}
		})
	}
	if v, n := agreement(source, source, source, 100, 100); v != 1 || n != 0 {
		t.Errorf("nothing moved: %.2f over %d, want 1 over 0", v, n)
	}
}
