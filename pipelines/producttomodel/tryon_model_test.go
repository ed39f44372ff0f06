package producttomodel

import (
	"context"
	"image"
	"image/draw"
	"math"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/transfer"
)

// oracleSize is oracle-catvton's person size (its fashiond.json).
const oracleW, oracleH = 192, 256

// TestTryOnModelDressesModelPhoto: with the oracle try-on model, dress puts
// the red tee on the standing man (a modelImageUrl-like photo) with the
// model, on the subject's crop: inside the transfer's garment region
// (eroded past its edge latent cells) the mean colour is the garment
// photo's mean as fed to the model within 4 levels; every pixel of the crop
// outside the region grown by 1 px, and every pixel outside the crop, is
// the photo's own; the five self-checks pass.
func TestTryOnModelDressesModelPhoto(t *testing.T) {
	p := pipelinetest.Perception(t)
	pl := New(p, nil).WithTryOner(pipelinetest.ContractTryOner(t))
	model := pipelinetest.Image(t, "images/codait_man_standing.jpg")
	prod := pipelinetest.Image(t, "garments/flatlay_tee_red.png")
	g, err := transfer.AnalyzeGarment(context.Background(), p, prod)
	if err != nil {
		t.Fatal(err)
	}
	subj, err := transfer.FindSubject(context.Background(), p, model, "modelImageUrl")
	if err != nil {
		t.Fatal(err)
	}
	o := transfer.Options{Accuracy: transfer.AccuracyHigh, Seed: 7}
	d, err := pl.dress(context.Background(), subj, prod, g, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.tryOn == nil || d.tryOn.Model != "oracle-catvton" || d.tryOn.Steps != 30 || len(d.checks) != 5 {
		t.Fatalf("try-on %+v, checks %+v, notes %q", d.tryOn, d.checks, d.notes)
	}
	for _, c := range d.checks {
		if !c.Pass {
			t.Fatalf("check %+v fails", c)
		}
	}
	region := subj.TryOnRegion(d.info)
	pipelinetest.WritePNG(t, "ptm_tryon_oracle.png", d.img)
	outCrop := bodypkg.Crop(d.img, subj.Crop)
	want := fedMean(prod, region.Rect.Dx(), region.Rect.Dy())
	checkRegionMean(t, outCrop, region, want)
	checkOutside(t, subj.CropImage(), outCrop, region)
	inCrop := image.NewGray(d.img.Rect)
	draw.Draw(inCrop, subj.Crop, image.White, image.Point{}, draw.Src)
	if s := bodypkg.ChangedOutside(model, d.img, inCrop, 0); s != 0 {
		t.Fatalf("%.4f%% of the pixels outside the subject's crop changed, want 0", 100*s)
	}
}

// fedMean is the mean colour of the garment photo as the try-on model is
// fed it for a person image of w×h.
func fedMean(gimg image.Image, w, h int) [3]float64 {
	fw, fh := generative.TryOnSize(w, h, oracleW, oracleH)
	fed := generative.PadGarment(gimg, fw, fh)
	var m [3]float64
	for i := 0; i < len(fed.Pix); i += 4 {
		for c := range 3 {
			m[c] += float64(fed.Pix[i+c]) / float64(fw*fh)
		}
	}
	return m
}

// checkRegionMean: the image's mean colour inside the region eroded by one
// and a half latent cells at the model's working size is want within 4.
func checkRegionMean(t *testing.T, img *image.RGBA, region *image.Gray, want [3]float64) {
	t.Helper()
	fw, _ := generative.TryOnSize(region.Rect.Dx(), region.Rect.Dy(), oracleW, oracleH)
	inner := mask.Erode(region, 1.5*8*float64(region.Rect.Dx())/float64(fw))
	var sum [3]float64
	n := 0
	for i, v := range inner.Pix {
		if v < 128 {
			continue
		}
		for c := range 3 {
			sum[c] += float64(img.Pix[4*i+c])
		}
		n++
	}
	if n < 1000 {
		t.Fatalf("only %d pixels inside the region", n)
	}
	for c := range 3 {
		if d := math.Abs(sum[c]/float64(n) - want[c]); d > 4 {
			t.Fatalf("channel %d: region mean %.1f, want the fed garment's %.1f", c, sum[c]/float64(n), want[c])
		}
	}
	t.Logf("region of %d pixels: mean %.1f %.1f %.1f, garment as fed %.1f %.1f %.1f", n, sum[0]/float64(n), sum[1]/float64(n), sum[2]/float64(n), want[0], want[1], want[2])
}

// checkOutside: every pixel outside the region grown by 1 px is unchanged.
func checkOutside(t *testing.T, orig, out *image.RGBA, region *image.Gray) {
	t.Helper()
	grown := mask.Dilate(region, 1)
	for i, v := range grown.Pix {
		if v >= 128 {
			continue
		}
		if !slices.Equal(orig.Pix[4*i:4*i+3], out.Pix[4*i:4*i+3]) {
			t.Fatalf("pixel %d outside the try-on region changed: %v -> %v", i, orig.Pix[4*i:4*i+3], out.Pix[4*i:4*i+3])
		}
	}
}

// TestTryOnModelThroughRun: a job with modelImageUrl and the oracle try-on
// model says path generative, method try-on(oracle-catvton)+style-...,
// and the model's note; with the oracle text-to-image model also installed
// and no modelImageUrl, the generated stripes hold no person, the note says
// a preset was used, and the preset is dressed by the try-on model.
func TestTryOnModelThroughRun(t *testing.T) {
	p := pipelinetest.Perception(t)
	ton := pipelinetest.ContractTryOner(t)
	cases := []struct {
		name   string
		pl     *Pipeline
		in     Inputs
		models []string
		note   string
	}{
		{"modelImageUrl", New(p, nil).WithTryOner(ton),
			Inputs{ProductImage: "file:garments/flatlay_tee_red.png", ModelImageURL: "file:images/codait_man_standing.jpg", Quality: "1k", SampleCount: 1, Ratio: "3:4"},
			[]string{"oracle-catvton"}, "model: modelImageUrl"},
		{"preset after text-to-image", New(p, library(t)).WithTextToImage(pipelinetest.ContractTextToImage(t)).WithTryOner(ton),
			Inputs{ProductImage: "file:garments/flatlay_tee_red.png", CustomPrompt: "a man", Quality: "1k", SampleCount: 1, Ratio: "3:4"},
			[]string{"oracle-floatb", "oracle-catvton"}, "made no usable model photo (sample 1: no person found in it); a preset model photo was used instead"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.pl.GenerativeModels(); !slices.Equal(got, c.models) {
				t.Fatalf("generative models %v, want %v", got, c.models)
			}
			res, err := runWith(t, c.pl, c.in)
			if err != nil {
				t.Fatal(err)
			}
			o := res.Outputs[0]
			notes := strings.Join(o.Notes, " | ")
			if o.Path != "generative" || o.Method != "try-on(oracle-catvton)+style-studio+tier" ||
				!strings.Contains(notes, `model "oracle-catvton"`) || !strings.Contains(notes, "30 steps") || !strings.Contains(notes, c.note) {
				t.Fatalf("path %s, method %s, notes %s", o.Path, o.Method, notes)
			}
		})
	}
}

// TestFailedTryOnFallsBack: a try-on output that fails a face check gives
// way to the classical transfer, and the note names the check.
func TestFailedTryOnFallsBack(t *testing.T) {
	pl := New(pipelinetest.Perception(t), nil).WithTryOner(pipelinetest.BlackoutTryOn{})
	res, err := runWith(t, pl, Inputs{ProductImage: "file:garments/flatlay_tee_red.png", ModelImageURL: "file:images/codait_man_standing.jpg", Quality: "1k", SampleCount: 1, Ratio: "3:4"})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	if o.Path != "reference" || o.Method != "tps-warp+lighting+style-studio+tier" ||
		!strings.Contains(strings.Join(o.Notes, " "), "the try-on model's output was not used: product-to-model: self-check face_region_change failed") {
		t.Fatalf("path %s, method %s, notes %q", o.Path, o.Method, o.Notes)
	}
}
