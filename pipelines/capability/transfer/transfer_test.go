package transfer

import (
	"context"
	_ "embed"
	"image"
	"math"
	"testing"

	"fashiond/internal/golden"
	"fashiond/internal/pipelinetest"
	"fashiond/perception"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// goldenList holds the recorded digests (golden.Digest) of this package's
// real runs; testdata/golden.sha256 says when and how they were recorded.
//
//go:embed testdata/golden.sha256
var goldenList string

// personRegions returns the original person's upper-clothes region, a
// face box and the background (outside the dilated person mask).
func personRegions(t *testing.T, p perception.Perception, img image.Image) (b *body, face image.Rectangle, bg *image.Gray) {
	t.Helper()
	ctx := context.Background()
	b, err := analyzePerson(ctx, p, raster.CopyRGBA(img))
	if err != nil {
		t.Fatal(err)
	}
	faces, err := p.Faces(ctx, img)
	if err != nil || len(faces) == 0 {
		t.Fatalf("no face in the person image: %v", err)
	}
	f := faces[0].Box
	face = image.Rect(int(f[0]), int(f[1]), int(f[2]), int(f[3]))
	pm := mask.Dilate(mask.Binary(b.pm, 64), 0.12*b.sw)
	bg = image.NewGray(pm.Rect)
	for i, v := range pm.Pix {
		if v < 128 {
			bg.Pix[i] = 255
		}
	}
	return b, face, bg
}

func meanDeltaE(img image.Image, region *image.Gray, c garment.Lab) float64 {
	var sum, n float64
	b := img.Bounds()
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			if region.Pix[y*region.Stride+x] < 128 {
				continue
			}
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			sum += garment.DeltaE2000Lab(garment.ToLab(uint8(r>>8), uint8(g>>8), uint8(bl>>8)), c)
			n++
		}
	}
	return sum / n
}

// TestTransferTeeOnRealPhoto: a red tee on the white-tee photo. The
// garment's colour fills the old top's region (mean CIEDE2000 to the
// garment's dominant colour <= 12), the face (SSIM >= 0.95) and the
// background (SSIM >= 0.97) are unchanged, and the output has the person's
// size.
func TestTransferTeeOnRealPhoto(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	person := pipelinetest.Image(t, "images/fashn_model.webp")
	tee, err := garment.Analyze(ctx, p, pipelinetest.Image(t, "garments/flatlay_tee_red.png"))
	if err != nil {
		t.Fatal(err)
	}
	out, info, err := Transfer(ctx, p, person, tee, Options{Accuracy: AccuracyStandard})
	if err != nil {
		t.Fatal(err)
	}
	if err := golden.CheckDigest(goldenList, "tee-standard", out); err != nil {
		t.Error(err)
	}
	if info.Method != "affine-warp+lighting" || len(info.Notes) == 0 {
		t.Errorf("method %q notes %v", info.Method, info.Notes)
	}
	if out.Bounds().Size() != person.Bounds().Size() {
		t.Fatalf("output %v, want the person's size %v", out.Bounds().Size(), person.Bounds().Size())
	}
	b, face, bg := personRegions(t, p, person)
	g, err := garment.Analyze(context.Background(), p, pipelinetest.Image(t, "garments/flatlay_tee_red.png"))
	if err != nil {
		t.Fatal(err)
	}
	dom := garment.ToLab(g.Dominant.R, g.Dominant.G, g.Dominant.B)
	core := mask.Erode(subMask(b.upper, mask.Dilate(b.front, 6)), 6)
	if de := meanDeltaE(out, core, dom); de > 12 {
		t.Errorf("mean CIEDE2000 of the clothes region to the garment colour %.1f > 12", de)
	} else {
		t.Logf("clothes region mean CIEDE2000 to garment %.1f (before: %.1f)", de, meanDeltaE(person, core, dom))
	}
	if s := garment.SSIM(person, out, face); s < 0.95 {
		t.Errorf("face SSIM %.3f < 0.95", s)
	} else {
		t.Logf("face SSIM %.4f", s)
	}
	if s := garment.SSIMMasked(person, out, bg); s < 0.97 {
		t.Errorf("background SSIM %.3f < 0.97", s)
	} else {
		t.Logf("background SSIM %.4f", s)
	}
}

// TestTryonTrousersOnLegs: trousers land on the legs: most of the new
// garment lies on the old trousers' region and it covers most of it.
func TestTryonTrousersOnLegs(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	person := pipelinetest.Image(t, "images/fashn_model.webp")
	g, err := garment.Analyze(ctx, p, pipelinetest.Image(t, "garments/flatlay_trousers_khaki.png"))
	if err != nil {
		t.Fatal(err)
	}
	out, info, err := Transfer(ctx, p, person, g, Options{Accuracy: AccuracyStandard})
	if err != nil {
		t.Fatal(err)
	}
	if err := golden.CheckDigest(goldenList, "trousers-standard", out); err != nil {
		t.Error(err)
	}
	if info.Kind != garment.KindBottom {
		t.Fatalf("kind %s", info.Kind)
	}
	b, err := analyzePerson(ctx, p, raster.CopyRGBA(person))
	if err != nil {
		t.Fatal(err)
	}
	// Legs: the old trousers, a little wider; and below the shoulders.
	legs := mask.Dilate(b.lower, 0.1*b.sw)
	var on, all, covered, old float64
	for i, v := range info.Layer.Pix {
		a := float64(v) / 255
		all += a
		if legs.Pix[i] >= 128 {
			on += a
		}
		if b.lower.Pix[i] >= 128 {
			old++
			if v >= 128 || b.front.Pix[i] >= 128 {
				covered++
			}
		}
	}
	if on/all < 0.9 {
		t.Errorf("only %.0f%% of the trousers lie on the legs", 100*on/all)
	}
	if covered/old < 0.7 {
		t.Errorf("the trousers cover %.0f%% of the old trousers, want >= 70%%", 100*covered/old)
	}
	// Mid-thighs and mid-shins are covered by the new garment.
	for _, k := range []perception.Point{lerp(b.hipL, b.kneeL, 0.5), lerp(b.hipR, b.kneeR, 0.5), lerp(b.kneeL, b.ankL, 0.5), lerp(b.kneeR, b.ankR, 0.5)} {
		if info.Layer.GrayAt(int(k.X), int(k.Y)).Y < 200 {
			t.Errorf("leg point (%.0f,%.0f) not covered", k.X, k.Y)
		}
	}
	if s := garment.SSIM(person, out, image.Rect(0, 0, 832, int(b.shL.Y))); s < 0.97 {
		t.Errorf("above the shoulders SSIM %.3f < 0.97: trousers must not touch the upper body", s)
	}
	t.Logf("on legs %.0f%%, covers %.0f%% of the old trousers", 100*on/all, 100*covered/old)
}

// TestTryonHyperLongSleeves: the hyper tier on a long-sleeve top: the
// sleeves reach the forearms (the garment colour at both elbows) and the
// folds of the old tee carry over (luminance follows the old tee more than
// at the high tier).
func TestTryonHyperLongSleeves(t *testing.T) {
	p := pipelinetest.Perception(t)
	ctx := context.Background()
	person := pipelinetest.Image(t, "images/fashn_model.webp")
	g, err := garment.Analyze(ctx, p, pipelinetest.Image(t, "garments/flatlay_longsleeve_green.png"))
	if err != nil {
		t.Fatal(err)
	}
	out, info, err := Transfer(ctx, p, person, g, Options{Accuracy: AccuracyHyper})
	if err != nil {
		t.Fatal(err)
	}
	if err := golden.CheckDigest(goldenList, "sleeves-hyper", out); err != nil {
		t.Error(err)
	}
	if info.Method != "tps-warp-hires+shading+edge-refine" {
		t.Errorf("method %q", info.Method)
	}
	b, err := analyzePerson(ctx, p, raster.CopyRGBA(person))
	if err != nil {
		t.Fatal(err)
	}
	dom := garment.ToLab(g.Dominant.R, g.Dominant.G, g.Dominant.B)
	for _, e := range []perception.Point{lerp(b.shL, b.elL, 0.9), lerp(b.shR, b.elR, 0.9)} {
		r := image.Rect(int(e.X)-4, int(e.Y)-4, int(e.X)+5, int(e.Y)+5)
		m := image.NewGray(out.Bounds())
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				m.Pix[y*m.Stride+x] = 255
			}
		}
		if de := meanDeltaE(out, m, dom); de > 15 {
			t.Errorf("near the elbow (%.0f,%.0f) CIEDE2000 to the garment %.1f > 15: the sleeve does not reach", e.X, e.Y, de)
		}
	}
	// Fold shading: inside the old top's region the new garment's luminance
	// follows the old tee's (correlation), much more than the high tier's
	// (lighting only).
	core := mask.Erode(subMask(b.upper, mask.Dilate(b.front, 6)), 8)
	orig := raster.CopyRGBA(person)
	hi, _, err := Transfer(ctx, p, person, g, Options{Accuracy: AccuracyHigh})
	if err != nil {
		t.Fatal(err)
	}
	if err := golden.CheckDigest(goldenList, "sleeves-high", hi); err != nil {
		t.Error(err)
	}
	ch, cr := lumaCorr(out, orig, core), lumaCorr(hi, orig, core)
	if ch < 0.45 || ch < cr+0.1 {
		t.Errorf("luminance correlation with the old clothes: hyper %.2f, high %.2f; want hyper >= 0.45 and 0.1 above high", ch, cr)
	}
	t.Logf("luminance correlation with the old tee: hyper %.2f, high %.2f", ch, cr)
}

// lumaCorr is the Pearson correlation of two images' luma over a mask.
func lumaCorr(a, b *image.RGBA, m *image.Gray) float64 {
	var sa, sb, saa, sbb, sab, n float64
	for i, v := range m.Pix {
		if v < 128 {
			continue
		}
		pa, pb := a.Pix[i*4:i*4+3], b.Pix[i*4:i*4+3]
		x := 0.299*float64(pa[0]) + 0.587*float64(pa[1]) + 0.114*float64(pa[2])
		y := 0.299*float64(pb[0]) + 0.587*float64(pb[1]) + 0.114*float64(pb[2])
		sa += x
		sb += y
		saa += x * x
		sbb += y * y
		sab += x * y
		n++
	}
	cov := sab/n - sa/n*sb/n
	return cov / math.Sqrt((saa/n-sa/n*sa/n)*(sbb/n-sb/n*sb/n))
}
