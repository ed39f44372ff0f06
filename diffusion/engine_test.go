package diffusion

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math"
	"sync"
	"testing"

	"fashiond/diffusion/scheduler"
)

// pixelTol is the largest difference allowed between the engine's float
// pixels and the oracle's closed form. The graphs compute in float32
// (the text encoder's sin of id·f, tanh, the sigma interpolation); the
// schedulers step in float64 and narrow to float32 after each step. The
// measured error is below 1e-5; a wrong token, pad id, sigma table, input
// scaling or VAE scaling moves pixels by more than 1e-2.
const pixelTol = 1e-4

// expectLatents is where a scheduler lands on the oracle: x0 itself, except
// for DDIM and PNDM with set_alpha_to_one false, whose last step goes to
// alphas_cumprod[0] instead of 1 and keeps that much of the trajectory's
// noise eps' = (x_first − sqrt(ab_first)·x0)/sqrt(1 − ab_first).
func expectLatents(t *testing.T, m *Model, req Request, x0 []float64) []float64 {
	t.Helper()
	s, err := scheduler.New(m.sched, req.Method, req.Steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	one := m.sched.SetAlphaToOne != nil && *m.sched.SetAlphaToOne
	if (s.Kind() != scheduler.DDIM && s.Kind() != scheduler.PNDM) || one {
		return x0
	}
	noise := gaussian(newRNG(req.Seed), len(x0))
	ac := s.AlphasCumprod()
	abF, ac0 := ac[int(s.Timesteps()[0])], ac[0]
	out := make([]float64, len(x0))
	for i, x := range x0 {
		eps := (float64(noise[i]) - math.Sqrt(abF)*x) / math.Sqrt(1-abF)
		out[i] = math.Sqrt(ac0)*x + math.Sqrt(1-ac0)*eps
	}
	return out
}

func TestSchedulersLandOnTheOracle(t *testing.T) {
	rt := testRuntime(t)
	dir := contract(t, "oracle-t2i")
	m := loadModel(t, rt, dir, Options{})
	o := loadOracle(t, dir)
	const W, H = 64, 48 // not square: a transposed latent would show
	h, w := H/8, W/8
	neg, pos := o.x0("blurry", h, w, nil), o.x0("a red dress on a mannequin", h, w, nil)
	for _, k := range []scheduler.Kind{"", scheduler.PNDM, scheduler.DDIM, scheduler.Euler, scheduler.EulerAncestral, scheduler.DPMPP2M, scheduler.LCM} {
		t.Run(string(k), func(t *testing.T) {
			req := Request{Prompt: "a red dress on a mannequin", NegativePrompt: "blurry", Guidance: 3, Steps: 12, Method: k, Seed: 7, Width: W, Height: H}
			res, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := o.decode(expectLatents(t, m, req, cfg(neg, pos, 3)), h, w)
			if d := maxDiff(res.Pixels, want); d > pixelTol {
				t.Fatalf("%s: max pixel difference %.3g from the closed form, want <= %g", res.Method, d, pixelTol)
			}
			if s := spread(want); s < 0.05 {
				t.Fatalf("closed form is nearly flat (spread %.3g): the test would prove little", s)
			}
			if b := res.Image.Bounds(); b.Dx() != W || b.Dy() != H {
				t.Fatalf("image %v, want %dx%d", b, W, H)
			}
		})
	}
}

func TestGuidanceFormulaAndPrompts(t *testing.T) {
	rt := testRuntime(t)
	dir := contract(t, "oracle-floatb")
	m := loadModel(t, rt, dir, Options{})
	o := loadOracle(t, dir)
	h, w := 4, 6
	neg, pos := o.x0("low quality", h, w, nil), o.x0("linen shirt", h, w, nil)
	empty := o.x0("", h, w, nil)
	cases := []struct {
		name     string
		guidance float64
		negative string
		want     []float64
	}{
		{"no guidance at 1", 1, "low quality", pos},
		{"no guidance below 1", 0.5, "low quality", pos},
		{"negative prompt", 4, "low quality", cfg(neg, pos, 4)},
		{"empty negative prompt", 2.5, "", cfg(empty, pos, 2.5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := m.Generate(context.Background(), Request{Prompt: "linen shirt", NegativePrompt: c.negative, Guidance: c.guidance, Steps: 8, Width: w * 8, Height: h * 8, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			want := o.decode(c.want, h, w)
			if d := maxDiff(res.Pixels, want); d > pixelTol {
				t.Fatalf("max pixel difference %.3g", d)
			}
			if d := maxDiff(res.Pixels, o.decode(neg, h, w)); d < 10*pixelTol {
				t.Fatalf("output also matches the negative prompt's x0 (%.3g): prompts do not move the output", d)
			}
		})
	}
}

// TestTensorConventions runs every variant of point 1 of the export
// format: int32 ids with int64 [B] timesteps and a latent_sample encoder
// (legacy), float [B] timesteps, v-prediction with "!" padding, LCM's
// timestep_cond, and float16 graphs.
func TestTensorConventions(t *testing.T) {
	rt := testRuntime(t)
	cases := []struct {
		variant  string
		guidance float64
		steps    int
		tol      float64
	}{
		{"oracle-legacy", 5, 10, pixelTol},
		{"oracle-floatb", 5, 10, pixelTol},
		{"oracle-vpred", 5, 10, pixelTol},
		{"oracle-lcm", 8.5, 4, pixelTol},
		// float16 I/O: latents and hidden states are rounded to 11
		// significant bits at every call (relative 4.9e-4), and the VAE
		// output too.
		{"oracle-fp16", 5, 10, 4e-3},
	}
	for _, c := range cases {
		t.Run(c.variant, func(t *testing.T) {
			dir := contract(t, c.variant)
			m := loadModel(t, rt, dir, Options{})
			o := loadOracle(t, dir)
			h, w := 5, 7
			req := Request{Prompt: "wool coat, studio light", NegativePrompt: "text", Guidance: c.guidance, Steps: c.steps, Seed: 11, Width: w * 8, Height: h * 8}
			res, err := m.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var x0 []float64
			if m.sig.condDim > 0 {
				x0 = o.x0(req.Prompt, h, w, scheduler.GuidanceEmbedding(c.guidance, m.sig.condDim))
			} else {
				x0 = cfg(o.x0(req.NegativePrompt, h, w, nil), o.x0(req.Prompt, h, w, nil), c.guidance)
			}
			want := o.decode(expectLatents(t, m, req, x0), h, w)
			if d := maxDiff(res.Pixels, want); d > c.tol {
				t.Fatalf("max pixel difference %.3g, want <= %g", d, c.tol)
			}
		})
	}
}

func TestFloat16ScalarTimestepNeedsTheAdapter(t *testing.T) {
	rt := testRuntime(t)
	_, err := Load(context.Background(), rt, contract(t, "oracle-fp16-scalar"), Options{})
	if err == nil || !contains(err.Error(), "rank-0 float16", "fashiond models install") {
		t.Fatalf("err = %v, want the adapter explanation", err)
	}
}

// testImage is a smooth colour gradient with a square.
func testImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{uint8(40 + 180*x/w), uint8(60 + 150*y/h), 120, 255}
			if x > w/4 && x < w/2 && y > h/4 && y < h/2 {
				c = color.NRGBA{230, 30, 30, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// leftHalfMask is white (repaint) on the left half.
func leftHalfMask(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w / 2 {
			m.SetGray(x, y, color.Gray{255})
		}
	}
	return m
}

func TestImg2ImgStrength(t *testing.T) {
	rt := testRuntime(t)
	dir := contract(t, "oracle-t2i")
	m := loadModel(t, rt, dir, Options{})
	o := loadOracle(t, dir)
	const W, H = 48, 40
	var progress []int
	res, err := m.Generate(context.Background(), Request{
		Prompt: "denim jacket", Guidance: 1, Steps: 10, Strength: 0.5, Method: scheduler.Euler,
		Image: testImage(W, H), Seed: 5, Progress: func(done, total int) { progress = append(progress, done*100+total) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != ModeImage || res.Timings.Calls != 5 {
		t.Fatalf("mode %s with %d UNet calls, want img2img with int(10*0.5) = 5", res.Mode, res.Timings.Calls)
	}
	if len(progress) != 6 || progress[0] != 5 || progress[5] != 505 {
		t.Fatalf("progress %v, want 0/5 .. 5/5", progress)
	}
	want := o.decode(o.x0("denim jacket", H/8, W/8, nil), H/8, W/8)
	if d := maxDiff(res.Pixels, want); d > pixelTol {
		t.Fatalf("max pixel difference %.3g", d)
	}
}

// TestInpainting9Channels: inside the mask the oracle's x0 for the prompt,
// outside it the input's own pixels; before the composite the UNet's
// output outside the mask is the decoded masked-image latents, i.e. the
// 8×8 block average of the input (this pins the channel order of the
// 9-channel input and the VAE scaling on both sides).
func TestInpainting9Channels(t *testing.T) {
	rt := testRuntime(t)
	dir := contract(t, "oracle-inpaint")
	m := loadModel(t, rt, dir, Options{})
	o := loadOracle(t, dir)
	checkInpainting(t, m, o, true)
}

// TestInpainting4Channels blends the re-noised original latents outside
// the mask after every step (a text-to-image UNet).
func TestInpainting4Channels(t *testing.T) {
	rt := testRuntime(t)
	dir := contract(t, "oracle-t2i")
	m := loadModel(t, rt, dir, Options{})
	o := loadOracle(t, dir)
	checkInpainting(t, m, o, false)
}

func checkInpainting(t *testing.T, m *Model, o *oracle, nine bool) {
	t.Helper()
	const W, H = 64, 32
	h, w := H/8, W/8
	src := testImage(W, H)
	res, err := m.Generate(context.Background(), Request{
		Prompt: "silk blouse", Guidance: 1, Steps: 10, Method: scheduler.Euler,
		Image: src, Mask: leftHalfMask(W, H), Seed: 9,
	})
	if err != nil {
		t.Fatal(err)
	}
	x0 := o.x0("silk blouse", h, w, nil)
	want := o.decode(x0, h, w)
	for y := range H {
		for x := range W {
			got := res.Image.NRGBAAt(x, y)
			if x >= W/2 {
				if got != src.NRGBAAt(x, y) {
					t.Fatalf("pixel (%d,%d) outside the mask is %v, input %v", x, y, got, src.NRGBAAt(x, y))
				}
				continue
			}
			for c := range 3 {
				if d := math.Abs(float64(res.Pixels[c*W*H+y*W+x]) - want[c*W*H+y*W+x]); d > pixelTol {
					t.Fatalf("pixel (%d,%d) inside the mask differs from the oracle by %.3g", x, y, d)
				}
			}
		}
	}
	if !nine {
		return
	}
	for y := range H {
		for x := W / 2; x < W; x++ {
			for c := range 3 {
				avg := blockAverage(src, c, x/8*8, y/8*8)
				if d := math.Abs(float64(res.Pixels[c*W*H+y*W+x]) - avg); d > 1e-3 {
					t.Fatalf("generated pixel (%d,%d,%d) outside the mask %.4f, want the masked-image latents' %.4f", x, y, c, res.Pixels[c*W*H+y*W+x], avg)
				}
			}
		}
	}
}

func blockAverage(img *image.NRGBA, c, x0, y0 int) float64 {
	s := 0.0
	for y := y0; y < y0+8; y++ {
		for x := x0; x < x0+8; x++ {
			s += float64(img.Pix[img.PixOffset(x, y)+c]) / 255
		}
	}
	return s / 64
}

// TestBatchedEqualsUnbatched runs jobs of different seeds, steps,
// guidance and methods at once with batching on and compares each with
// the same job alone.
func TestBatchedEqualsUnbatched(t *testing.T) {
	rt := testRuntime(t)
	for _, variant := range []string{"oracle-floatb", "oracle-t2i", "shape-sd15"} {
		t.Run(variant, func(t *testing.T) {
			dir := contract(t, variant)
			solo := loadModel(t, rt, dir, Options{})
			batched := loadModel(t, rt, dir, Options{Batching: true, MaxBatch: 3})
			reqs := []Request{
				{Prompt: "a", Guidance: 5, Steps: 6, Seed: 1, Width: 64, Height: 64},
				{Prompt: "b c", Guidance: 1, Steps: 4, Seed: 2, Width: 64, Height: 64},
				{Prompt: "d", Guidance: 2, Steps: 6, Seed: 3, Width: 64, Height: 64, Method: scheduler.DPMPP2M},
			}
			got := runConcurrently(t, batched, reqs, nil)
			for i, r := range reqs {
				want, err := solo.Generate(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxDiff(got[i].Pixels, widen(want.Pixels)); d > 1e-5 {
					t.Fatalf("job %d batched differs from unbatched by %.3g", i, d)
				}
			}
			st := batched.Stats()
			if st.Rows <= st.Calls {
				t.Fatalf("%d UNet calls carried %d rows: nothing was batched", st.Calls, st.Rows)
			}
			if st.Rows > 3*st.Calls {
				t.Fatalf("%d rows in %d calls exceeds max batch 3", st.Rows, st.Calls)
			}
		})
	}
}

// TestCancelledJobLeavesTheBatch cancels one of three batched jobs after
// its second step; it returns context.Canceled and the others finish with
// their unbatched results.
func TestCancelledJobLeavesTheBatch(t *testing.T) {
	rt := testRuntime(t)
	dir := contract(t, "oracle-floatb")
	solo := loadModel(t, rt, dir, Options{})
	batched := loadModel(t, rt, dir, Options{Batching: true})
	reqs := []Request{
		{Prompt: "x", Guidance: 3, Steps: 8, Seed: 1, Width: 32, Height: 32},
		{Prompt: "cancel me", Guidance: 3, Steps: 8, Seed: 2, Width: 32, Height: 32},
		{Prompt: "z", Guidance: 1, Steps: 8, Seed: 3, Width: 32, Height: 32},
	}
	got := runConcurrently(t, batched, reqs, map[int]int{1: 2})
	if got[1] != nil {
		t.Fatal("the cancelled job returned a result")
	}
	for _, i := range []int{0, 2} {
		want, err := solo.Generate(context.Background(), reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(got[i].Pixels, widen(want.Pixels)); d > 1e-5 {
			t.Fatalf("job %d differs by %.3g after the cancel", i, d)
		}
	}
}

// runConcurrently starts every request at once; cancelAt maps a request
// to the step at which its context is cancelled (it must then fail with
// context.Canceled).
func runConcurrently(t *testing.T, m *Model, reqs []Request, cancelAt map[int]int) []*Result {
	t.Helper()
	out := make([]*Result, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if at, ok := cancelAt[i]; ok {
			r.Progress = func(done, _ int) {
				if done == at {
					cancel()
				}
			}
		}
		wg.Go(func() { out[i], errs[i] = m.Generate(ctx, r) })
	}
	wg.Wait()
	for i, err := range errs {
		_, cancelled := cancelAt[i]
		if cancelled != (err != nil) || (cancelled && !errors.Is(err, context.Canceled)) {
			t.Fatalf("job %d: err = %v (cancelled: %v)", i, err, cancelled)
		}
	}
	return out
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !stringsContains(s, p) {
			return false
		}
	}
	return true
}
