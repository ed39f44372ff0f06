package tryon

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"math"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/raster"
)

func request(t *testing.T, in Inputs) *pipelines.Request {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// Zero values are dropped as a client would leave them out, so the
	// spec's defaults apply (spec.Decode), as for a job from the API.
	var given map[string]any
	if err := json.Unmarshal(raw, &given); err != nil {
		t.Fatal(err)
	}
	for k, v := range given {
		if v == "" || v == 0.0 {
			delete(given, k)
		}
	}
	if raw, err = json.Marshal(given); err != nil {
		t.Fatal(err)
	}
	return &pipelines.Request{
		JobID: "test-" + in.GarmentImage, Model: "tryon", Inputs: pipelinetest.Inputs(t, "tryon", string(raw)),
		Images:   pipelinetest.Loader{Dir: pipelinetest.Testdata(t)},
		Progress: func(string, float64, string) {},
	}
}

func run(t *testing.T, in Inputs) (*pipelines.Result, error) {
	t.Helper()
	return New(pipelinetest.Perception(t)).Run(context.Background(), request(t, in))
}

// TestTryonSamplesDiffer: two samples are two different fits, not copies.
func TestTryonSamplesDiffer(t *testing.T) {
	res, err := run(t, Inputs{PersonImage: "file:images/fashn_model.webp", GarmentImage: "file:garments/flatlay_tee_navy_stripes.png", Accuracy: "standard", SampleCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 2 {
		t.Fatalf("%d outputs, want 2", len(res.Outputs))
	}
	a, b := raster.RGBA(res.Outputs[0].Image), raster.RGBA(res.Outputs[1].Image)
	diff := 0
	for i := 0; i < len(a.Pix); i += 4 {
		d := math.Abs(float64(a.Pix[i])-float64(b.Pix[i])) + math.Abs(float64(a.Pix[i+1])-float64(b.Pix[i+1])) + math.Abs(float64(a.Pix[i+2])-float64(b.Pix[i+2]))
		if d > 60 {
			diff++
		}
	}
	frac := float64(diff) / float64(len(a.Pix)/4)
	if frac < 0.005 {
		t.Errorf("samples differ in %.2f%% of pixels, want >= 0.5%%", 100*frac)
	}
	t.Logf("samples differ in %.2f%% of pixels", 100*frac)
}

// TestTryonNoPerson: a garment photo as personImage is a job error that
// says no person was found.
func TestTryonNoPerson(t *testing.T) {
	_, err := run(t, Inputs{PersonImage: "file:garments/flatlay_tee_red.png", GarmentImage: "file:garments/flatlay_tee_navy_stripes.png", Accuracy: "standard", SampleCount: 1})
	var pe *pipelines.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "person") {
		t.Fatalf("error %v, want a job error mentioning the person", err)
	}
	t.Log(pe.Msg)
}

// TestTryonTrousersOnUpperBody: trousers on a photo whose legs are not in
// the old clothes (an upper-body portrait) are a job error, never the
// unchanged photo.
func TestTryonTrousersOnUpperBody(t *testing.T) {
	res, err := run(t, Inputs{PersonImage: "file:images/astronaut.png", GarmentImage: "file:garments/flatlay_trousers_khaki.png", Accuracy: "standard", SampleCount: 1})
	if err == nil {
		person := raster.RGBA(pipelinetest.Image(t, "images/astronaut.png"))
		out := raster.RGBA(res.Outputs[0].Image)
		same := 0
		for i := range out.Pix {
			if out.Pix[i] == person.Pix[i] {
				same++
			}
		}
		if same == len(out.Pix) {
			t.Fatal("returned the unchanged photo")
		}
		t.Logf("placed on the astronaut (%.1f%% of bytes unchanged)", 100*float64(same)/float64(len(out.Pix)))
		return
	}
	var pe *pipelines.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a job error", err)
	}
	t.Log(pe.Msg)
}

// TestTryonTeeOnRealPhoto: a red tee on the white-tee photo through the
// pipeline gives one reference output of the person's size whose face is
// unchanged (SSIM >= 0.95 on the detected face box); the garment region's
// colour is the transfer package's test.
func TestTryonTeeOnRealPhoto(t *testing.T) {
	p := pipelinetest.Perception(t)
	person := pipelinetest.Image(t, "images/fashn_model.webp")
	res, err := run(t, Inputs{PersonImage: "file:images/fashn_model.webp", GarmentImage: "file:garments/flatlay_tee_red.png", Accuracy: "standard", SampleCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 {
		t.Fatalf("%d outputs, want 1", len(res.Outputs))
	}
	o := res.Outputs[0]
	if o.Path != "reference" || o.Method != "affine-warp+lighting" || len(o.Notes) == 0 {
		t.Errorf("output path %q method %q notes %v", o.Path, o.Method, o.Notes)
	}
	if o.Image.Bounds().Size() != person.Bounds().Size() {
		t.Fatalf("output %v, want the person's size %v", o.Image.Bounds().Size(), person.Bounds().Size())
	}
	faces, err := p.Faces(context.Background(), person)
	if err != nil || len(faces) == 0 {
		t.Fatalf("no face in the person image: %v", err)
	}
	f := faces[0].Box
	face := image.Rect(int(f[0]), int(f[1]), int(f[2]), int(f[3]))
	if s := garment.SSIM(person, o.Image, face); s < 0.95 {
		t.Errorf("face SSIM %.3f < 0.95", s)
	}
}
