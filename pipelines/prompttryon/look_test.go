package prompttryon

import (
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/pipelines/pipelinetest"
	"fashiond/pipelines/raster"
)

// TestWriteLooks writes dressed photos for people to look at into
// $FASHIOND_LOOK_DIR (skipped when unset).
func TestWriteLooks(t *testing.T) {
	dir := os.Getenv("FASHIOND_LOOK_DIR")
	if dir == "" {
		t.Skip("set FASHIOND_LOOK_DIR to write the images")
	}
	p := pipelinetest.Perception(t)
	prompts := []string{"burgundy t-shirt", "navy shirt with white horizontal stripes", "olive trousers",
		"red gingham shirt", "emerald polka dot shirt", "houndstooth trousers", "plaid shirt in red and navy",
		"floral blush dress", "blue jeans and a mustard tee", "pinstripe charcoal suit", "light blue top", "black denim jacket"}
	if s := os.Getenv("PROMPTS"); s != "" {
		prompts = strings.Split(s, "|")
	}
	for _, name := range []string{"images/fashn_model.webp", "images/astronaut.png", "images/fashn_garment.webp"} {
		img := pipelinetest.Image(t, name)
		src := rgbaCopy(img)
		r, err := findRegions(context.Background(), p, src)
		if err != nil {
			t.Fatal(err)
		}
		save(t, filepath.Join(dir, "tryon_"+filepath.Base(name)+"_mask.png"), maskImage(r))
		for _, pr := range prompts {
			spec, err := Parse(pr)
			if err != nil {
				t.Fatal(err)
			}
			out, err := dress(src, r, spec, 0)
			if err != nil {
				t.Logf("%s %q: %v", name, pr, err)
				continue
			}
			save(t, filepath.Join(dir, "tryon_"+filepath.Base(name)+"_"+strings.ReplaceAll(pr, " ", "_")+".png"), out)
		}
	}
}

func maskImage(r *regions) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, r.w, r.h))
	for i := range r.top.P {
		m.Pix[i*4] = uint8(raster.Clamp01(r.top.P[i]) * 255)
		m.Pix[i*4+1] = uint8(raster.Clamp01(r.bottom.P[i]) * 255)
		m.Pix[i*4+2] = uint8(raster.Clamp01(r.person.P[i]) * 100)
		m.Pix[i*4+3] = 255
	}
	return m
}

func save(t *testing.T, path string, img image.Image) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// TestWritePipelineLooks runs whole jobs (style, tier, variations) and
// writes the outputs into $FASHIOND_LOOK_DIR (skipped when unset).
func TestWritePipelineLooks(t *testing.T) {
	dir := os.Getenv("FASHIOND_LOOK_DIR")
	if dir == "" {
		t.Skip("set FASHIOND_LOOK_DIR to write the images")
	}
	pl := New(pipelinetest.Perception(t), nil)
	for k, in := range []map[string]any{
		{"personImage": "file:images/fashn_model.webp", "prompt": "navy shirt with white stripes", "styleId": "studio", "sampleCount": 2},
		{"personImage": "file:images/astronaut.png", "prompt": "emerald jacket", "styleId": "flash", "sampleCount": 1},
		{"personImage": "file:images/fashn_garment.webp", "prompt": "red plaid shirt", "styleId": "analog", "sampleCount": 1, "ratio": "4:5"},
	} {
		res, err := run(t, pl, in)
		if err != nil {
			t.Fatal(err)
		}
		for s, o := range res.Outputs {
			save(t, filepath.Join(dir, "job"+string(rune('0'+k))+"_"+string(rune('0'+s))+".png"), o.Image)
			t.Logf("job %d sample %d: %v %s", k, s, o.Image.Bounds(), o.Method)
		}
	}
}
