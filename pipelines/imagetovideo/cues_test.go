package imagetovideo

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"math"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/scene"
)

// TestChooseBedFor: the prompt's setting word wins; without one the
// picture's cues choose, and the reason names what decided.
func TestChooseBedFor(t *testing.T) {
	grass := Cues{Green: 0.71, Sky: 0.26}
	beach := Cues{Sky: 0.4, Sand: 0.5}
	wall := Cues{Sand: 0.39}
	cases := []struct {
		prompt string
		cues   Cues
		want   Bed
		why    string
	}{
		{"slow orbit on the beach", wall, BedBeach, `prompt's word "beach"`},
		{"walking down a city street", grass, BedStreet, `prompt's word "city"`},
		{"studio shoot, pan left", grass, BedStudio, `prompt's word "studio"`},
		{"a stroll in the park", wall, BedNature, `prompt's word "park"`},
		{"rainy evening", beach, BedRain, `prompt's word "rain"`},
		{"orbit around him", grass, BedNature, "foliage or grass"},
		{"", beach, BedBeach, "sky over sand"},
		{"zoom in slowly", wall, BedStudio, "neither the prompt nor the picture"},
		{"", Cues{Sand: 0.9}, BedStudio, "light sand 90%"},
		{"", Cues{Green: 0.29}, BedStudio, "green 29%"},
	}
	for _, c := range cases {
		bed, why := ChooseBedFor(c.prompt, c.cues)
		if bed != c.want || !strings.Contains(why, c.why) {
			t.Errorf("ChooseBedFor(%q, %+v) = %s, %q; want %s, containing %q", c.prompt, c.cues, bed, why, c.want, c.why)
		}
	}
}

// TestPictureCuesSynthetic: a plate of sky over sand, one of grass.
func TestPictureCuesSynthetic(t *testing.T) {
	shore := image.NewRGBA(image.Rect(0, 0, 200, 300))
	draw.Draw(shore, image.Rect(0, 0, 200, 150), image.NewUniform(color.RGBA{90, 150, 230, 255}), image.Point{}, draw.Src)
	draw.Draw(shore, image.Rect(0, 150, 200, 300), image.NewUniform(color.RGBA{225, 200, 160, 255}), image.Point{}, draw.Src)
	field := image.NewRGBA(image.Rect(0, 0, 200, 300))
	draw.Draw(field, field.Rect, image.NewUniform(color.RGBA{70, 120, 50, 255}), image.Point{}, draw.Src)
	for _, c := range []struct {
		name             string
		img              image.Image
		green, sky, sand float64
		bed              Bed
	}{{"shore", shore, 0, 1, 1, BedBeach}, {"field", field, 1, 0, 0, BedNature}} {
		got := PictureCues(c.img)
		if math.Abs(got.Green-c.green) > 0.01 || math.Abs(got.Sky-c.sky) > 0.01 || math.Abs(got.Sand-c.sand) > 0.01 {
			t.Errorf("%s: cues %+v, want green %v sky %v sand %v", c.name, got, c.green, c.sky, c.sand)
		}
		if bed, _ := ChooseBedFor("", got); bed != c.bed {
			t.Errorf("%s: bed %s, want %s", c.name, bed, c.bed)
		}
	}
}

// TestPictureCuesPhotos: on two real photos without a setting word, the
// woman with the dog on a field gets the nature bed, the man before an
// orange office wall keeps the studio room tone (the wall's orange reads
// as sand, but there is no sky over it).
func TestPictureCuesPhotos(t *testing.T) {
	perc := pipelinetest.Perception(t)
	cases := []struct {
		image            string
		green, sky, sand float64
		bed              Bed
	}{
		{"images/pexels_woman_dog_standing.jpg", 0.7108, 0.2633, 0, BedNature},
		{"images/codait_man_standing.jpg", 0, 0, 0.3898, BedStudio},
	}
	for _, c := range cases {
		sc, err := scene.Layers(context.Background(), perc, pipelinetest.Image(t, c.image), scene.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := PictureCues(sc.Background)
		if math.Abs(got.Green-c.green) > 0.02 || math.Abs(got.Sky-c.sky) > 0.02 || math.Abs(got.Sand-c.sand) > 0.02 {
			t.Errorf("%s: cues %+v, want green %v sky %v sand %v (±0.02)", c.image, got, c.green, c.sky, c.sand)
		}
		if bed, why := ChooseBedFor("slow orbit around her", got); bed != c.bed {
			t.Errorf("%s: bed %s (%s), want %s", c.image, bed, why, c.bed)
		}
	}
}
