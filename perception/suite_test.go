package perception_test

import (
	"context"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/disintegration/imaging"

	"fashiond/inference"
	"fashiond/internal/pipelinetest"
	"fashiond/perception"
)

// openSuite opens a second suite (own runtime handle) with the given
// options, closed at the end of the test.
func openSuite(t testing.TB, opts perception.SuiteOptions) *perception.Suite {
	t.Helper()
	lib := os.Getenv("FASHIOND_ORT_LIB")
	if lib == "" {
		lib = filepath.Join(pipelinetest.Root(), ".deps", "onnxruntime", "1.30.0", "libonnxruntime.so.1")
	}
	dir := os.Getenv("FASHIOND_MODELS_DIR")
	if dir == "" {
		dir = filepath.Join(pipelinetest.Root(), "data", "models")
	}
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: lib, IntraOpThreads: 2, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := perception.NewSuite(context.Background(), rt, dir, opts)
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error("second Close:", err)
		}
		rt.Close()
	})
	return s
}

func TestNewSuiteErrors(t *testing.T) {
	lib := filepath.Join(pipelinetest.Root(), ".deps", "onnxruntime", "1.30.0", "libonnxruntime.so.1")
	if v := os.Getenv("FASHIOND_ORT_LIB"); v != "" {
		lib = v
	}
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: lib, IntraOpThreads: 1, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	empty := t.TempDir()
	if _, err := perception.NewSuite(context.Background(), rt, empty, perception.SuiteOptions{}); err == nil {
		t.Error("NewSuite on an empty directory succeeded")
	}
	if _, err := perception.NewSuite(context.Background(), nil, empty, perception.SuiteOptions{}); err == nil {
		t.Error("NewSuite without runtime succeeded")
	}
	dir := filepath.Join(pipelinetest.Root(), "data", "models")
	if _, err := perception.NewSuite(context.Background(), rt, dir, perception.SuiteOptions{UpscalePolicy: "bicubic"}); err == nil {
		t.Error("unknown upscale policy accepted")
	}
	var nilSuite *perception.Suite
	if err := nilSuite.Close(); err != nil {
		t.Error(err)
	}
}

func TestDepthPersonNearerThanBackground(t *testing.T) {
	p := pipelinetest.Perception(t)
	img := pipelinetest.Image(t, "images/fashn_model.webp")
	d, err := p.Depth(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if d.W != b.Dx() || d.H != b.Dy() || len(d.Data) != d.W*d.H {
		t.Fatalf("depth %dx%d (%d values), want %dx%d", d.W, d.H, len(d.Data), b.Dx(), b.Dy())
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, v := range d.Data {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo < 0 || lo > 0.01 || hi > 1 || hi < 0.99 {
		t.Errorf("depth range %.3f..%.3f, want min-max normalised 0..1", lo, hi)
	}
	mask, err := p.PersonMask(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	var in, out float64
	var nin, nout int
	for y := 0; y < d.H; y++ {
		for x := 0; x < d.W; x++ {
			if mask.Pix[y*mask.Stride+x] >= 128 {
				in += float64(d.At(x, y))
				nin++
			} else {
				out += float64(d.At(x, y))
				nout++
			}
		}
	}
	in, out = in/float64(nin), out/float64(nout)
	t.Logf("mean inverse depth: person %.3f, background %.3f", in, out)
	if in <= out+0.15 {
		t.Errorf("person (%.3f) not nearer than background (%.3f)", in, out)
	}
}

func TestToTierAllRatiosAndTiers(t *testing.T) {
	p := pipelinetest.Perception(t) // lanczos policy
	src := pipelinetest.Image(t, "images/astronaut.png")
	ratios := []string{"1:1", "3:4", "4:3", "9:16", "16:9", "2:3", "3:2", "4:5", "5:4", "21:9"}
	for _, tier := range []string{"1k", "2k", "4k"} {
		px, _ := perception.TierPixels(tier)
		for _, r := range ratios {
			out, err := p.ToTier(context.Background(), src, tier, r)
			if err != nil {
				t.Fatalf("%s %s: %v", tier, r, err)
			}
			w, h := out.Bounds().Dx(), out.Bounds().Dy()
			a, b, _ := perception.ParseRatio(r)
			if w*b != h*a {
				t.Errorf("%s %s: %dx%d is not exactly %s", tier, r, w, h, r)
			}
			if d := math.Abs(float64(w*h-px)) / float64(px); d > 0.01 {
				t.Errorf("%s %s: %dx%d = %d px, %.2f%% off %d", tier, r, w, h, w*h, 100*d, px)
			}
		}
	}
}

func TestToTierCentreCrops(t *testing.T) {
	p := pipelinetest.Perception(t)
	// 2000x1000: red | green | blue thirds... centre crop to 1:1 keeps
	// x 500..1500: red on the left quarter... use halves: left red, right blue.
	img := image.NewNRGBA(image.Rect(0, 0, 2000, 1000))
	for y := 0; y < 1000; y++ {
		for x := 0; x < 2000; x++ {
			c := color.NRGBA{255, 0, 0, 255}
			if x >= 1000 {
				c = color.NRGBA{0, 0, 255, 255}
			}
			if x < 500 || x >= 1500 {
				c = color.NRGBA{0, 255, 0, 255} // must be cropped away
			}
			img.SetNRGBA(x, y, c)
		}
	}
	out, err := p.ToTier(context.Background(), img, "1k", "1:1")
	if err != nil {
		t.Fatal(err)
	}
	if b := out.Bounds(); b.Dx() != 1000 || b.Dy() != 1000 {
		t.Fatalf("size %v", b)
	}
	n := imaging.Clone(out)
	green := 0
	for i := 0; i < len(n.Pix); i += 4 {
		if n.Pix[i+1] > 128 {
			green++
		}
	}
	if green > 0 {
		t.Errorf("%d pixels of the cropped-away sides survived", green)
	}
	if c := n.NRGBAAt(250, 500); c.R < 250 || c.B > 5 {
		t.Errorf("left half %v, want red", c)
	}
	if c := n.NRGBAAt(750, 500); c.B < 250 || c.R > 5 {
		t.Errorf("right half %v, want blue", c)
	}
	// "" ratio: the image's own nearest ratio (2:1 -> 16:9).
	out, err = p.ToTier(context.Background(), img, "1k", "")
	if err != nil {
		t.Fatal(err)
	}
	if w, h := out.Bounds().Dx(), out.Bounds().Dy(); w*9 != h*16 {
		t.Errorf("ratio \"\" gave %dx%d, want 16:9", w, h)
	}
	if _, err := p.ToTier(context.Background(), img, "8k", "1:1"); err == nil {
		t.Error("tier 8k accepted")
	}
	if _, err := p.ToTier(context.Background(), img, "1k", "1-1"); err == nil {
		t.Error("ratio 1-1 accepted")
	}
}

func TestToTierSuperResolution1k(t *testing.T) {
	s := openSuite(t, perception.SuiteOptions{UpscalePolicy: perception.PolicySRFast})
	src := imaging.Resize(pipelinetest.Image(t, "images/gocv_face.jpg"), 0, 200, imaging.Lanczos)
	src = imaging.CropCenter(src, 160, 200) // 4:5, 2x2 tiles
	out, err := s.ToTier(context.Background(), src, "1k", "4:5")
	if err != nil {
		t.Fatal(err)
	}
	w, h, _ := perception.TierSize("1k", "4:5")
	if b := out.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("size %v, want %dx%d", b, w, h)
	}
	lz := imaging.Resize(src, w, h, imaging.Lanczos)
	eSR, eLz := gradEnergy(out), gradEnergy(lz)
	t.Logf("1k tier gradient energy: SR-fast %.2f, Lanczos %.2f", eSR, eLz)
	if eSR <= eLz*1.1 {
		t.Errorf("SR tier not sharper than Lanczos: %.2f vs %.2f", eSR, eLz)
	}
	writePNG(t, "tier_1k_srfast.png", out)
	found := false
	for _, r := range s.Runners() {
		if r.Model == string(perception.SRFast) {
			found = true
		}
	}
	if !found {
		t.Error("sr-fast policy did not run realesr_general_x4v3")
	}
}

// TestBatchingMatchesSingleRuns runs N requests concurrently through the
// batched suite and compares them with single runs of the unbatched one.
func TestBatchingMatchesSingleRuns(t *testing.T) {
	single := pipelinetest.Perception(t)
	batched := openSuite(t, perception.SuiteOptions{Batching: true, UpscalePolicy: perception.PolicyLanczos})
	names := []string{"images/fashn_model.webp", "images/astronaut.png", "images/gocv_face.jpg", "images/fashn_garment.webp"}
	imgs := make([]image.Image, len(names))
	for i, n := range names {
		imgs[i] = pipelinetest.Image(t, n)
	}
	ctx := context.Background()
	type res struct {
		pose  *perception.Pose
		mask  *image.Gray
		parse *perception.Parsing
		sr    image.Image
	}
	tile := make([]image.Image, len(imgs))
	for i, img := range imgs {
		tile[i] = imaging.Resize(img, 96, 96, imaging.Lanczos) // one SR tile each
	}
	run := func(p perception.Perception, i int) (r res, err error) {
		if r.pose, err = p.Pose(ctx, imgs[i]); err != nil {
			return
		}
		if r.mask, err = p.PersonMask(ctx, imgs[i]); err != nil {
			return
		}
		if r.parse, err = p.Parse(ctx, imgs[i]); err != nil {
			return
		}
		r.sr, err = p.SuperResolve(ctx, tile[i], perception.SRFast)
		return
	}
	want := make([]res, len(imgs))
	for i := range imgs {
		var err error
		if want[i], err = run(single, i); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]res, len(imgs))
	errs := make([]error, len(imgs))
	var wg sync.WaitGroup
	for i := range imgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = run(batched, i)
		}()
	}
	wg.Wait()
	for i := range imgs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for j, k := range got[i].pose.Keypoints {
			w := want[i].pose.Keypoints[j]
			// 1e-4 in the model's 0..256 output space, in image pixels.
			tol := 1e-4 * float64(max(imgs[i].Bounds().Dx(), imgs[i].Bounds().Dy())) / 256 * 256
			if math.Abs(k.X-w.X) > tol || math.Abs(k.Y-w.Y) > tol || math.Abs(k.Visibility-w.Visibility) > 1e-4 {
				t.Errorf("%s joint %d: batched %+v, single %+v", names[i], j, k, w)
			}
		}
		if d := math.Abs(got[i].pose.Presence - want[i].pose.Presence); d > 1e-4 {
			t.Errorf("%s presence differs by %g", names[i], d)
		}
		for _, pair := range [][2]*image.Gray{
			{got[i].pose.Mask, want[i].pose.Mask}, {got[i].mask, want[i].mask},
			{got[i].parse.Skin, want[i].parse.Skin}, {got[i].parse.Clothes, want[i].parse.Clothes}, {got[i].parse.Hair, want[i].parse.Hair},
		} {
			if d := maxDiff(pair[0].Pix, pair[1].Pix); d > 1 {
				t.Errorf("%s: batched mask differs by %d/255", names[i], d)
			}
		}
		if d := maxDiff(imaging.Clone(got[i].sr).Pix, imaging.Clone(want[i].sr).Pix); d > 1 {
			t.Errorf("%s: batched SR differs by %d/255", names[i], d)
		}
	}
	filled := false
	for _, r := range batched.Runners() {
		t.Logf("%s: %s on %s, %d calls in %d batches (fill %.2f)", r.Model, r.Mode, r.Device, r.Stats.Calls, r.Stats.Batches, r.Stats.MeanFill)
		if r.Mode == "batched" && r.Stats.MeanFill > 1 {
			filled = true
		}
	}
	if !filled {
		t.Error("no model ever ran a batch of more than one request")
	}
}

func maxDiff(a, b []uint8) int {
	if len(a) != len(b) {
		return 256
	}
	d := 0
	for i := range a {
		d = max(d, int(max(a[i], b[i])-min(a[i], b[i])))
	}
	return d
}
