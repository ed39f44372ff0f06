package perception

import (
	"context"
	"image"
	"image/color"
	"math"
	"testing"

	"fashiond/inference"
)

func TestTilePositions(t *testing.T) {
	cases := []struct {
		n    int
		want []int
	}{
		{128, []int{0}},
		{100, []int{0}},
		{129, []int{0, 1}},
		{240, []int{0, 112}},
		{241, []int{0, 112, 113}},
		{1000, []int{0, 112, 224, 336, 448, 560, 672, 784, 872}},
	}
	for _, c := range cases {
		got := tilePositions(c.n, srTile, srOverlap)
		if len(got) != len(c.want) {
			t.Errorf("n=%d: %v, want %v", c.n, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("n=%d: %v, want %v", c.n, got, c.want)
			}
		}
		// Every pixel covered, neighbours overlap by at least srOverlap.
		for i := 1; i < len(got); i++ {
			if got[i-1]+srTile-got[i] < srOverlap && c.n > srTile {
				if got[i]+srTile != c.n || got[i-1]+srTile < got[i] {
					t.Errorf("n=%d: tiles %d and %d overlap too little", c.n, got[i-1], got[i])
				}
			}
		}
		if last := got[len(got)-1]; c.n >= srTile && last+srTile != c.n {
			t.Errorf("n=%d: last tile ends at %d", c.n, last+srTile)
		}
	}
}

func TestReflectIndex(t *testing.T) {
	cases := []struct{ i, n, want int }{
		{0, 5, 0}, {4, 5, 4}, {5, 5, 3}, {6, 5, 2}, {8, 5, 0}, {9, 5, 1}, {-1, 5, 1}, {-4, 5, 4}, {100, 1, 0}, {3, 2, 1},
	}
	for _, c := range cases {
		if got := reflectIndex(c.i, c.n); got != c.want {
			t.Errorf("reflectIndex(%d,%d)=%d, want %d", c.i, c.n, got, c.want)
		}
	}
}

func TestFeatherCrossfade(t *testing.T) {
	// Two tiles overlapping by exactly F: weights sum to 1 across the seam.
	T, F := 512, 64
	for i := 0; i < F; i++ {
		a := feather(T-F+i, T, F, false, true)
		b := feather(i, T, F, true, false)
		if math.Abs(float64(a+b-1)) > 1e-6 {
			t.Fatalf("offset %d: weights %.3f + %.3f != 1", i, a, b)
		}
	}
	if feather(0, T, F, false, false) != 1 || feather(T-1, T, F, false, false) != 1 {
		t.Error("edge tiles must keep full weight at the image border")
	}
}

func TestSampleRegionIdentityAndCrop(t *testing.T) {
	src := floatMap{W: 4, H: 2, Data: []float32{0, 1, 2, 3, 4, 5, 6, 7}}
	id := sampleRegion(src, 0, 0, 4, 2, 4, 2)
	for i, v := range id.Data {
		if v != src.Data[i] {
			t.Fatalf("identity resample changed %d: %v", i, id.Data)
		}
	}
	crop := sampleRegion(src, 1, 0, 3, 2, 2, 2)
	want := []float32{1, 2, 5, 6}
	for i, v := range crop.Data {
		if v != want[i] {
			t.Fatalf("crop %v, want %v", crop.Data, want)
		}
	}
	up := sampleRegion(floatMap{W: 2, H: 1, Data: []float32{0, 1}}, 0, 0, 2, 1, 4, 1)
	wantUp := []float32{0, 0.25, 0.75, 1}
	for i, v := range up.Data {
		if math.Abs(float64(v-wantUp[i])) > 1e-6 {
			t.Fatalf("upsample %v, want %v", up.Data, wantUp)
		}
	}
}

func TestPreparePoseRoundTrip(t *testing.T) {
	// A 300x150 image: resized to 256x128, placed at y offset 64.
	img := image.NewNRGBA(image.Rect(0, 0, 300, 150))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	in := preparePose(img)
	if in.rw != 256 || in.rh != 128 || in.ox != 0 || in.oy != 64 {
		t.Fatalf("layout %+v", in)
	}
	// Padding rows are black, image rows white.
	if in.tensor.Data[0] != 0 || in.tensor.Data[64*256*3] != 1 || in.tensor.Data[(64+128)*256*3] != 0 {
		t.Fatalf("padding not where expected")
	}
	// A keypoint at the centre of the 256 input maps to the image centre.
	out := []inference.Tensor{
		{Data: make([]float32, 195)}, {Data: []float32{5}}, {Data: make([]float32, 256*256)},
	}
	for i := 0; i < 39; i++ {
		out[0].Data[i*5], out[0].Data[i*5+1] = 128, 128
	}
	for y := 64; y < 192; y++ {
		for x := 0; x < 256; x++ {
			out[2].Data[y*256+x] = 10 // person inside the image area
		}
	}
	p, err := decodePose(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Keypoints[0]; math.Abs(k.X-150) > 1e-9 || math.Abs(k.Y-75) > 1e-9 || math.Abs(k.Visibility-0.5) > 1e-9 {
		t.Errorf("centre keypoint %+v, want (150,75) visibility 0.5", k)
	}
	if p.Presence < 0.99 {
		t.Errorf("presence %.3f", p.Presence)
	}
	if b := p.Mask.Bounds(); b.Dx() != 300 || b.Dy() != 150 {
		t.Fatalf("mask %v", b)
	}
	for _, v := range p.Mask.Pix {
		if v < 250 {
			t.Fatalf("mask has %d inside the image area (padding leaked in)", v)
		}
	}
}

func TestDecodeYuNetGrid(t *testing.T) {
	in := yunetInput{scale: 0.5, pw: 64, ph: 32}
	out := make([]inference.Tensor, 12)
	for si, s := range []int{8, 16, 32} {
		n := (64 / s) * (32 / s)
		out[si] = inference.Tensor{Data: make([]float32, n)}
		out[3+si] = inference.Tensor{Data: make([]float32, n)}
		out[6+si] = inference.Tensor{Data: make([]float32, 4*n)}
		out[9+si] = inference.Tensor{Data: make([]float32, 10*n)}
	}
	// Stride 16: grid 4x2; anchor row 1, col 2 -> index 6.
	i := 6
	out[1].Data[i], out[4].Data[i] = 0.81, 1 // score sqrt(0.81) = 0.9
	copy(out[7].Data[4*i:], []float32{0.5, 0.25, float32(math.Log(2)), 0})
	for j := 0; j < 5; j++ {
		out[10].Data[10*i+2*j], out[10].Data[10*i+2*j+1] = 0.5, 0.5
	}
	faces, err := decodeYuNet(in, out, 0.6)
	if err != nil {
		t.Fatal(err)
	}
	if len(faces) != 1 {
		t.Fatalf("%d faces", len(faces))
	}
	f := faces[0]
	// centre ((2+0.5)*16, (1+0.25)*16) = (40, 20); size 32x16; /0.5.
	want := [4]float64{(40 - 16) * 2, (20 - 8) * 2, (40 + 16) * 2, (20 + 8) * 2}
	for k := range want {
		if math.Abs(f.Box[k]-want[k]) > 1e-4 {
			t.Fatalf("box %v, want %v", f.Box, want)
		}
	}
	if math.Abs(f.Score-0.9) > 1e-6 || f.Landmarks[0].X != 80 || f.Landmarks[0].Y != 48 {
		t.Errorf("face %+v", f)
	}
}

func TestNMS(t *testing.T) {
	faces := []Face{
		{Box: [4]float64{0, 0, 10, 10}, Score: 0.7},
		{Box: [4]float64{1, 1, 11, 11}, Score: 0.9},
		{Box: [4]float64{50, 50, 60, 60}, Score: 0.8},
	}
	got := nms(faces, 0.3)
	if len(got) != 2 || got[0].Score != 0.9 || got[1].Score != 0.8 {
		t.Errorf("nms %+v", got)
	}
}

func TestCropToRatio(t *testing.T) {
	cases := []struct {
		w, h, a, b, cw, ch int
	}{
		{2000, 1000, 1, 1, 1000, 1000},
		{1000, 2000, 3, 4, 1000, 1333},
		{1000, 1000, 16, 9, 1000, 563},
		{1000, 1000, 1, 1, 1000, 1000},
		{1920, 1080, 21, 9, 1920, 823},
	}
	for _, c := range cases {
		img := image.NewNRGBA(image.Rect(0, 0, c.w, c.h))
		img.Set(c.w/2, c.h/2, color.White)
		got := CropToRatio(img, c.a, c.b).Bounds()
		if got.Dx() != c.cw || got.Dy() != c.ch {
			t.Errorf("%dx%d to %d:%d: %v, want %dx%d", c.w, c.h, c.a, c.b, got, c.cw, c.ch)
		}
	}
}

func TestEstimateLandmarksInsideBox(t *testing.T) {
	b := [4]float64{10, 20, 110, 140}
	for i, p := range estimateLandmarks(b) {
		if p.X <= b[0] || p.X >= b[2] || p.Y <= b[1] || p.Y >= b[3] {
			t.Errorf("landmark %d %v outside %v", i, p, b)
		}
	}
}

func TestCancelledFirstLoadDoesNotPoison(t *testing.T) {
	s := internalSuite(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	if _, err := s.PersonMask(ctx, img); err == nil {
		t.Fatal("cancelled call succeeded")
	}
	if _, err := s.PersonMask(context.Background(), img); err != nil {
		t.Fatalf("after a cancelled first call: %v", err)
	}
}

// FuzzRatioCrop checks the crop geometry ToTier uses for any image size and
// any ratio string a request may carry.
func FuzzRatioCrop(f *testing.F) {
	f.Add(1000, 2000, "3:4")
	f.Add(1, 1, "21:9")
	f.Add(5000, 3, "1:1")
	f.Add(640, 480, "0:4")
	f.Add(640, 480, "9999999999:1")
	f.Fuzz(func(t *testing.T, w, h int, ratio string) {
		if w < 1 || h < 1 || w > 1<<15 || h > 1<<15 {
			return
		}
		a, b, err := ParseRatio(ratio)
		if err != nil || a > 1<<15 || b > 1<<15 {
			return
		}
		cw, ch := ratioCrop(w, h, a, b)
		if cw < 1 || ch < 1 || cw > w || ch > h {
			t.Fatalf("%dx%d to %d:%d: crop %dx%d out of bounds", w, h, a, b, cw, ch)
		}
		if cw != w && ch != h {
			t.Fatalf("%dx%d to %d:%d: crop %dx%d cuts both sides", w, h, a, b, cw, ch)
		}
		// Aspect within one pixel of a:b (unless clamped to a 1-pixel side).
		if cw > 1 && ch > 1 {
			if d := math.Abs(float64(cw)*float64(b) - float64(ch)*float64(a)); d > float64(max(a, b)) {
				t.Fatalf("%dx%d to %d:%d: crop %dx%d aspect off by %.0f", w, h, a, b, cw, ch, d)
			}
		}
	})
}

func TestAutoPolicyOnCPU(t *testing.T) {
	s := internalSuite(t)
	ctx := context.Background()
	cases := []struct {
		w, h    int
		tier, r string
		policy  string
		want    SRModel
	}{
		{256, 256, "1k", "1:1", PolicyAuto, SRFast}, // 3.9x, 9 tiles
		{1000, 1000, "4k", "1:1", PolicyAuto, ""},   // 81 tiles: Lanczos
		{512, 512, "1k", "1:1", PolicyAuto, ""},     // under 2x
		{2000, 2000, "1k", "1:1", PolicyAuto, ""},   // downscale
		{1000, 1000, "4k", "1:1", PolicySRQuality, SRQuality},
		{1000, 1000, "4k", "1:1", PolicySRFast, SRFast},
		{200, 200, "4k", "1:1", PolicyLanczos, ""},
		{2000, 2000, "1k", "1:1", PolicySRQuality, ""}, // never SR to shrink
	}
	for _, c := range cases {
		tw, th, _ := TierSize(c.tier, c.r)
		a, b, _ := ParseRatio(c.r)
		cw, ch := ratioCrop(c.w, c.h, a, b)
		got, err := s.upscalePlan(ctx, c.policy, cw, ch, tw, th)
		if err != nil || got != c.want {
			t.Errorf("%dx%d -> %s %s (%s): %q, %v; want %q", c.w, c.h, c.tier, c.r, c.policy, got, err, c.want)
		}
	}
}

func TestSRTileFor(t *testing.T) {
	for _, c := range []struct {
		device string
		w, h   int
		want   int
	}{
		{"cpu", 1000, 1000, srTile},
		{"cpu", 64, 64, srTile},
		{"cuda", 1000, 1000, 1024}, // a 1k image is one call
		{"cuda", 1000, 700, 1024},
		{"cuda", 300, 200, 320},
		{"cuda", 50, 40, srTile},
		{"cuda", 4000, 3000, srTileGPUMax},
	} {
		got := srTileFor(c.device, c.w, c.h)
		if got != c.want {
			t.Errorf("srTileFor(%s, %d, %d) = %d, want %d", c.device, c.w, c.h, got, c.want)
		}
		if c.device == "cuda" && max(c.w, c.h) <= srTileGPUMax && len(tilePositions(max(c.w, got), got, srOverlap))*len(tilePositions(max(c.h, got), got, srOverlap)) != 1 {
			t.Errorf("%dx%d on cuda is not one tile of %d", c.w, c.h, got)
		}
	}
}
