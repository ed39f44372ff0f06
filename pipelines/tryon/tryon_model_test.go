package tryon

import (
	"context"
	"image"
	"math"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/transfer"
)

// TestTryOnModelPath runs tryon with the oracle try-on model installed on
// the white-tee photo and a red tee: the output says path generative and
// names the model and standard accuracy's 20 steps; the garment region
// (tryOnMask, eroded past its edge cells) averages to the colour the oracle
// gives (the mean of the garment photo as fed) within 4 levels; every pixel
// outside the region grown by 1 px (face, hands, hair, background) is the
// photo's own.
func TestTryOnModelPath(t *testing.T) {
	p := pipelinetest.Perception(t)
	ton := pipelinetest.ContractTryOner(t)
	res, err := New(p).WithTryOner(ton).Run(context.Background(), request(t, Inputs{PersonImage: "file:images/fashn_model.webp", GarmentImage: "file:garments/flatlay_tee_red.png"}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	notes := strings.Join(o.Notes, " ")
	if o.Path != "generative" || o.Method != "try-on(oracle-catvton)" || !strings.Contains(notes, "20 steps") || !strings.Contains(notes, `"oracle-catvton"`) {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Fatalf("returned output fails %+v", c)
		}
	}
	// The region the model repainted, as the pipeline computed it.
	person := pipelinetest.Image(t, "images/fashn_model.webp")
	gimg := pipelinetest.Image(t, "garments/flatlay_tee_red.png")
	subj, err := findSubject(context.Background(), p, person)
	if err != nil {
		t.Fatal(err)
	}
	g, err := transfer.AnalyzeGarment(context.Background(), p, gimg)
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := transfer.Transfer(context.Background(), p, subImage(subj.img, subj.crop), g, transfer.Options{Accuracy: "standard", Seed: int64(pipelines.Seed("test-file:garments/flatlay_tee_red.png") >> 1)})
	if err != nil {
		t.Fatal(err)
	}
	region := subj.tryOnMask(info)
	pipelinetest.WritePNG(t, "tryon_model_oracle.png", o.Image)
	checkRegionColour(t, raster.RGBA(o.Image), region, subj.crop.Min, fedGarmentMean(gimg, subj.crop))
	checkOutsideRegion(t, raster.RGBA(person), raster.RGBA(o.Image), region, subj.crop.Min)
	if share := pipelinetest.ChangedShare(person, o.Image, pipelinetest.Outside(subj.alpha)); share != 0 {
		t.Fatalf("%.4f%% of the pixels outside the subject changed", 100*share)
	}
}

// fedGarmentMean is the mean colour of the garment photo as the try-on
// model is fed it for a crop of that size.
func fedGarmentMean(gimg image.Image, crop image.Rectangle) [3]float64 {
	w, h := generative.TryOnSize(crop.Dx(), crop.Dy(), 192, 256)
	fed := generative.PadGarment(gimg, w, h)
	var m [3]float64
	for i := 0; i < len(fed.Pix); i += 4 {
		for c := range 3 {
			m[c] += float64(fed.Pix[i+c]) / float64(w*h)
		}
	}
	return m
}

// checkRegionColour: inside the region, eroded by one and a half latent
// cells at the working size (cells on the region's edge take the latent
// mask of their corner pixel, as the engine's nearest downsampling does),
// the output's mean colour is want within 4 levels.
func checkRegionColour(t *testing.T, out *image.RGBA, region *image.Gray, at image.Point, want [3]float64) {
	t.Helper()
	w, _ := generative.TryOnSize(region.Rect.Dx(), region.Rect.Dy(), 192, 256)
	cell := 8 * float64(region.Rect.Dx()) / float64(w)
	inner := mask.Erode(region, 1.5*cell)
	var sum [3]float64
	n := 0
	for y := range inner.Rect.Dy() {
		for x := range inner.Rect.Dx() {
			if inner.Pix[y*inner.Stride+x] < 128 {
				continue
			}
			o := out.PixOffset(at.X+x, at.Y+y)
			for c := range 3 {
				sum[c] += float64(out.Pix[o+c])
			}
			n++
		}
	}
	if n < 1000 {
		t.Fatalf("only %d pixels inside the region", n)
	}
	for c := range 3 {
		if d := math.Abs(sum[c]/float64(n) - want[c]); d > 4 {
			t.Fatalf("channel %d: region mean %.1f, want the fed garment's %.1f (%d pixels)", c, sum[c]/float64(n), want[c], n)
		}
	}
	t.Logf("region of %d pixels: mean %.1f %.1f %.1f, garment as fed %.1f %.1f %.1f", n, sum[0]/float64(n), sum[1]/float64(n), sum[2]/float64(n), want[0], want[1], want[2])
}

// checkOutsideRegion: every pixel of the photo outside the region grown by
// 1 px is unchanged.
func checkOutsideRegion(t *testing.T, person, out *image.RGBA, region *image.Gray, at image.Point) {
	t.Helper()
	grown := mask.Dilate(region, 1)
	b := person.Rect
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			p := image.Pt(x-at.X, y-at.Y)
			if p.In(grown.Rect) && grown.Pix[p.Y*grown.Stride+p.X] >= 128 {
				continue
			}
			i := person.PixOffset(x, y)
			if !slices.Equal(person.Pix[i:i+3], out.Pix[i:i+3]) {
				t.Fatalf("pixel (%d,%d) outside the try-on region changed: %v -> %v", x, y, person.Pix[i:i+3], out.Pix[i:i+3])
			}
		}
	}
}

// TestFailedTryOnFallsBack: a try-on output that fails a self-check gives
// way to the classical warp, and the note names the check.
func TestFailedTryOnFallsBack(t *testing.T) {
	pl := New(pipelinetest.Perception(t)).WithTryOner(pipelinetest.BlackoutTryOn{})
	res, err := pl.Run(context.Background(), request(t, Inputs{PersonImage: "file:images/fashn_model.webp", GarmentImage: "file:images/fashn_garment.webp"}))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if o.Path != "reference" || o.Method != "affine-warp+lighting" ||
		!strings.Contains(strings.Join(o.Notes, " "), "the try-on model's output was not used: tryon: self-check face_region_change failed") {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
}

func TestGenerativeModelsListsTryOnFirst(t *testing.T) {
	cases := []struct {
		pl   *Pipeline
		want []string
	}{
		{New(nil), nil},
		{New(nil).WithTryOner(pipelinetest.BlackoutTryOn{}), []string{"blackout"}},
		{New(nil).WithInpainter(blackout{}).WithTryOner(pipelinetest.BlackoutTryOn{}), []string{"blackout", "blackout"}},
	}
	for i, c := range cases {
		if got := c.pl.GenerativeModels(); !slices.Equal(got, c.want) {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
