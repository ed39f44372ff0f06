package tryon

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
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

func TestDumpPerception(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	img := pipelinetest.Image(t, "images/fashn_model.webp")
	ctx := context.Background()
	pose, err := p.Pose(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("presence %.2f", pose.Presence)
	for i, k := range pose.Keypoints {
		t.Logf("kp %d: %.0f %.0f v=%.2f", i, k.X, k.Y, k.Visibility)
	}
	pm, _ := p.PersonMask(ctx, img)
	pr, err := p.Parse(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	savePNG(t, "/tmp/tryon/pm.png", pm)
	b := img.Bounds()
	out := image.NewRGBA(b)
	for i := 0; i < b.Dx()*b.Dy(); i++ {
		out.Pix[i*4] = pr.Skin.Pix[i]
		out.Pix[i*4+1] = pr.Clothes.Pix[i]
		out.Pix[i*4+2] = pr.Hair.Pix[i]
		out.Pix[i*4+3] = 255
	}
	savePNG(t, "/tmp/tryon/parse.png", out)
}

func TestDumpTransfers(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	person := pipelinetest.Image(t, "images/fashn_model.webp")
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
		g, err := garment.Analyze(ctx, p, pipelinetest.Image(t, "garments/"+name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		for _, acc := range accs {
			t0 := time.Now()
			out, info, err := Transfer(ctx, p, person, g, Options{Accuracy: acc})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %v coverage %.2f targets %v", name, acc, time.Since(t0), info.Coverage, info.Targets)
			savePNG(t, "/tmp/tryon/"+name+"_"+acc+".png", out)
		}
	}
}

func TestDumpRegions(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	person := toRGBA(pipelinetest.Image(t, "images/fashn_model.webp"))
	b, err := analyzePerson(context.Background(), p, person)
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewRGBA(person.Rect)
	copy(out.Pix, person.Pix)
	for i := 0; i < b.w*b.h; i++ {
		px := out.Pix[i*4 : i*4+4]
		if b.upper.Pix[i] >= 128 {
			px[0] = px[0] / 2
		}
		if b.lower.Pix[i] >= 128 {
			px[1] = px[1] / 2
		}
		if b.front.Pix[i] >= 128 {
			px[2] = 255
		}
		if b.hands.Pix[i] >= 128 {
			px[0] = 255
		}
	}
	savePNG(t, "/tmp/tryon/regions.png", out)
	t.Logf("chest %v legs %v", b.chest, b.legs)
}

func TestDumpParts(t *testing.T) {
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
	g, err := garment.Analyze(context.Background(), p, pipelinetest.Image(t, "garments/"+name+".png"))
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
	savePNG(t, "/tmp/tryon/parts_"+name+".png", out)
}

func TestDumpPresence(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	for _, f := range []string{"garments/flatlay_tee_red.png", "garments/tee_white_ghost.png", "images/camera.png", "images/fashn_garment.webp"} {
		pose, err := p.Pose(context.Background(), pipelinetest.Image(t, f))
		if err != nil {
			t.Fatal(err)
		}
		k := pose.Keypoints
		img := pipelinetest.Image(t, f)
		faces, _ := p.Faces(context.Background(), img)
		pr, _ := p.Parse(context.Background(), img)
		pm, _ := p.PersonMask(context.Background(), img)
		skin, person := 0, 0
		for i := range pr.Skin.Pix {
			if pr.Skin.Pix[i] >= 128 {
				skin++
			}
			if pm.Pix[i] >= 128 {
				person++
			}
		}
		n := float64(len(pm.Pix))
		fs := 0.0
		if len(faces) > 0 {
			fs = faces[0].Score
		}
		t.Logf("%s faces %d (%.2f) skin %.3f person %.3f", f, len(faces), fs, float64(skin)/n, float64(person)/n)
		t.Logf("%s presence %.2f sh vis %.2f %.2f pres %.2f %.2f", f, pose.Presence, k[11].Visibility, k[12].Visibility, k[11].Presence, k[12].Presence)
	}
}

func TestDumpComposite(t *testing.T) {
	if os.Getenv("TRYON_DEBUG") == "" {
		t.Skip()
	}
	p := pipelinetest.Perception(t)
	person := toRGBA(pipelinetest.Image(t, "images/fashn_model.webp"))
	name := os.Getenv("TRYON_G")
	g, err := garment.Analyze(context.Background(), p, pipelinetest.Image(t, "garments/"+name+".png"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := analyzePerson(context.Background(), p, person)
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := Transfer(context.Background(), p, person, g, Options{Accuracy: "high"})
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewRGBA(person.Rect)
	for i := 0; i < b.w*b.h; i++ {
		out.Pix[i*4] = info.Replaced.Pix[i]
		out.Pix[i*4+1] = info.Layer.Pix[i]
		out.Pix[i*4+2] = b.front.Pix[i]
		out.Pix[i*4+3] = 255
	}
	savePNG(t, "/tmp/tryon/comp_"+name+".png", out)
}
