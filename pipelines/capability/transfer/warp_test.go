package transfer

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines/capability/garment"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestFitAffineExact(t *testing.T) {
	want := Affine{1.2, -0.3, 15, 0.25, 0.9, -7}
	var src, dst []perception.Point
	r := rand.New(rand.NewPCG(1, 2))
	for range 6 {
		p := perception.Point{X: r.Float64() * 500, Y: r.Float64() * 500}
		src = append(src, p)
		dst = append(dst, want.Apply(p))
	}
	got, err := FitAffine(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !near(got[i], want[i], 1e-9) {
			t.Fatalf("coefficients %v, want %v", got, want)
		}
	}
	if _, err := FitAffine(src[:2], dst[:2]); err == nil {
		t.Error("two points: want an error")
	}
	line := []perception.Point{{X: 0, Y: 0}, {X: 1, Y: 1}, {X: 2, Y: 2}}
	if _, err := FitAffine(line, line); err == nil {
		t.Error("collinear points: want an error")
	}
}

func TestSimilarity(t *testing.T) {
	a0, a1 := perception.Point{X: 10, Y: 20}, perception.Point{X: 110, Y: 20}
	b0, b1 := perception.Point{X: 300, Y: 300}, perception.Point{X: 300, Y: 500}
	s := Similarity(a0, a1, b0, b1)
	for _, c := range [][2]perception.Point{{a0, b0}, {a1, b1}, {{X: 60, Y: 70}, {X: 200, Y: 400}}} {
		if got := s.Apply(c[0]); !near(got.X, c[1].X, 1e-9) || !near(got.Y, c[1].Y, 1e-9) {
			t.Errorf("%v -> %v, want %v", c[0], got, c[1])
		}
	}
}

// TestTPS: the spline passes through its control points, reproduces an
// affine map exactly (no bending), and bends when one target moves.
func TestTPS(t *testing.T) {
	aff := Affine{0.8, 0.1, 40, -0.2, 1.1, 5}
	var src, dst []perception.Point
	for _, p := range [][2]float64{{0, 0}, {100, 0}, {0, 100}, {100, 100}, {50, 50}, {20, 80}, {75, 10}} {
		q := perception.Point{X: p[0], Y: p[1]}
		src = append(src, q)
		dst = append(dst, aff.Apply(q))
	}
	tp, err := FitTPS(src, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []perception.Point{{X: 33, Y: 61}, {X: -20, Y: 140}, {X: 90, Y: 5}} {
		x, y, _ := tp.Map(q.X, q.Y)
		w := aff.Apply(q)
		if !near(x, w.X, 1e-6) || !near(y, w.Y, 1e-6) {
			t.Errorf("affine data: %v -> (%.4f,%.4f), want %v", q, x, y, w)
		}
	}
	dst[4] = perception.Point{X: dst[4].X + 30, Y: dst[4].Y - 10}
	tp, err = FitTPS(src, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range src {
		x, y, _ := tp.Map(src[i].X, src[i].Y)
		if !near(x, dst[i].X, 1e-6) || !near(y, dst[i].Y, 1e-6) {
			t.Errorf("control %d: (%.4f,%.4f), want %v", i, x, y, dst[i])
		}
	}
	// Smoothing relaxes interpolation.
	ts, err := FitTPS(src, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	if x, _, _ := ts.Map(src[4].X, src[4].Y); near(x, dst[4].X, 1) {
		t.Errorf("lambda=1 still interpolates the moved point exactly (%.2f)", x)
	}
	if _, err := FitTPS(src[:2], dst[:2], 0); err == nil {
		t.Error("two points: want an error")
	}
}

// TestBone: a straight body bone maps along-distance proportionally and
// across-distance divided by the width; Flip mirrors; Reach limits.
func TestBone(t *testing.T) {
	b := &Bone{Body: []perception.Point{{X: 100, Y: 100}, {X: 100, Y: 300}}, G0: perception.Point{X: 0, Y: 0}, G1: perception.Point{X: 100, Y: 0}, Width: 2, Reach: 50}
	x, y, ok := b.Map(100, 200)
	if !ok || !near(x, 50, 1e-9) || !near(y, 0, 1e-9) {
		t.Errorf("mid-bone -> (%v,%v,%v), want (50,0)", x, y, ok)
	}
	x1, y1, _ := b.Map(120, 200)
	b.Flip = true
	x2, y2, _ := b.Map(120, 200)
	if !near(math.Abs(y1), 10, 1e-9) || !near(y1, -y2, 1e-9) || !near(x1, x2, 1e-9) {
		t.Errorf("across: (%v,%v) and flipped (%v,%v)", x1, y1, x2, y2)
	}
	if _, _, ok := b.Map(200, 200); ok {
		t.Error("beyond reach mapped")
	}
	// A bent polyline keeps arc length: the elbow maps to its fraction.
	bent := &Bone{Body: []perception.Point{{X: 0, Y: 0}, {X: 0, Y: 100}, {X: 100, Y: 100}}, G0: perception.Point{X: 0, Y: 0}, G1: perception.Point{X: 0, Y: 200}, Width: 1, Reach: 30}
	if x, y, _ := bent.Map(50, 100); !near(x, 0, 1e-9) || !near(y, 150, 1e-9) {
		t.Errorf("forearm middle -> (%v,%v), want (0,150)", x, y)
	}
}

func TestFitVariations(t *testing.T) {
	if f := fitFor(Options{}); f != (fit{1, 1, 1, 0}) {
		t.Errorf("variation 0 is not neutral: %+v", f)
	}
	a, b := fitFor(Options{Variation: 1, Seed: 7}), fitFor(Options{Variation: 2, Seed: 7})
	if a == b {
		t.Error("variations 1 and 2 are equal")
	}
	if a != fitFor(Options{Variation: 1, Seed: 7}) {
		t.Error("not deterministic")
	}
	for _, f := range []fit{a, b} {
		if math.Abs(f.width-1) < 0.04 || math.Abs(f.length-1) < 0.04 || math.Abs(f.sleeve-1) < 0.08 {
			t.Errorf("variation too small to see: %+v", f)
		}
	}
}

// BenchmarkTransfer times one transfer of the red tee onto fashn_model.webp
// (832x1248) per accuracy; the garment analysis is outside the loop.
func BenchmarkTransfer(b *testing.B) {
	p := pipelinetest.Perception(b)
	ctx := context.Background()
	person := pipelinetest.Image(b, "images/fashn_model.webp")
	g, err := garment.Analyze(ctx, p, pipelinetest.Image(b, "garments/flatlay_tee_red.png"))
	if err != nil {
		b.Fatal(err)
	}
	for _, acc := range []string{AccuracyStandard, AccuracyHigh, AccuracyHyper} {
		b.Run(acc, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Transfer(ctx, p, person, g, Options{Accuracy: acc}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
