package tryon

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fashiond/models"
	"fashiond/pipelines/garment"

	"fashiond/pipelines/pipelinetest"
)

func savePNG(t testing.TB, path string, img image.Image) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// TestWriteResults writes every test garment on fashn_model.webp as PNGs to
// $TRYON_DEBUG (TRYON_ACC: accuracies, comma-separated; TRYON_G: garment
// names) for looking at; skipped unless TRYON_DEBUG is set.
func TestWriteResults(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	pf := "images/fashn_model.webp"
	if v := os.Getenv("TRYON_P"); v != "" {
		pf = v
	}
	person := pipelinetest.Image(t, pf)
	ctx := context.Background()
	accs := []string{"standard"}
	if a := os.Getenv("TRYON_ACC"); a != "" {
		accs = strings.Split(a, ",")
	}
	gs := []string{"flatlay_tee_red", "flatlay_tee_navy_stripes", "flatlay_longsleeve_green", "flatlay_trousers_khaki", "tee_white_ghost"}
	if a := os.Getenv("TRYON_G"); a != "" {
		gs = strings.Split(a, ",")
	}
	for _, name := range gs {
		file := "garments/" + name + ".png"
		if name == "fashn_garment" {
			file = "images/fashn_garment.webp"
		}
		g, err := garment.Analyze(ctx, p, pipelinetest.Image(t, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, acc := range accs {
			t0 := time.Now()
			v := 0
			if s := os.Getenv("TRYON_VAR"); s != "" {
				v = int(s[0] - '0')
			}
			out, info, err := Transfer(ctx, p, person, g, Options{Accuracy: acc, Variation: v, Seed: 42})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %v coverage %.2f targets %v", name, acc, time.Since(t0), info.Coverage, info.Targets)
			savePNG(t, filepath.Join(os.Getenv("TRYON_DEBUG"), name+"_"+acc+".png"), out)
		}
	}
}

// TestWriteParts writes the warped parts of garment TRYON_G on the person
// TRYON_P, tinted, with the body targets (yellow) and joints (cyan), to
// $TRYON_DEBUG; skipped unless TRYON_DEBUG is set.
func TestWriteParts(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	pf := "images/fashn_model.webp"
	if v := os.Getenv("TRYON_P"); v != "" {
		pf = v
	}
	person := toRGBA(pipelinetest.Image(t, pf))
	b, err := analyzePerson(context.Background(), p, person)
	if err != nil {
		t.Fatal(err)
	}
	name := os.Getenv("TRYON_G")
	file := "garments/" + name + ".png"
	if name == "fashn_garment" {
		file = "images/fashn_garment.webp"
	}
	g, err := garment.Analyze(context.Background(), p, pipelinetest.Image(t, file))
	if err != nil {
		t.Fatal(err)
	}
	info := &TransferInfo{Targets: map[string]models.Point{}}
	var parts []part
	if g.Kind == garment.KindBottom {
		parts, err = placeBottom(b, g, g.Cutout, "high", fitFor(Options{}), info)
	} else {
		parts, err = placeTop(b, g, g.Cutout, "high", fitFor(Options{}), info)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewRGBA(person.Rect)
	copy(out.Pix, person.Pix)
	tints := [][3]float32{{1, 0.3, 0.3}, {0.3, 1, 0.3}, {0.3, 0.3, 1}}
	for k, pt := range parts {
		for i := 0; i < b.w*b.h; i++ {
			a := pt.lay.pix[i*4+3]
			for c := 0; c < 3; c++ {
				o := float32(out.Pix[i*4+c])
				out.Pix[i*4+c] = uint8(o + (tints[k%3][c]*200-o)*a*0.7)
			}
		}
	}
	for n, q := range info.Targets {
		for dy := -4; dy <= 4; dy++ {
			for dx := -4; dx <= 4; dx++ {
				out.Set(int(q.X)+dx, int(q.Y)+dy, color.RGBA{255, 255, 0, 255})
			}
		}
		t.Logf("%s %.0f,%.0f", n, q.X, q.Y)
	}
	for _, q := range []models.Point{b.shL, b.shR, b.elL, b.elR, b.wrL, b.wrR, b.hipL, b.hipR, b.kneeL, b.kneeR, b.ankL, b.ankR} {
		for dy := -4; dy <= 4; dy++ {
			for dx := -4; dx <= 4; dx++ {
				out.Set(int(q.X)+dx, int(q.Y)+dy, color.RGBA{0, 255, 255, 255})
			}
		}
	}
	savePNG(t, filepath.Join(os.Getenv("TRYON_DEBUG"), "parts_"+name+".png"), out)
}
