package diffusion

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"fashiond/diffusion/scheduler"
)

// tryOnTol is the largest difference allowed between the try-on oracle's
// float pixels and its closed form: the VAE encoder averages 8×8 cells and
// the UNet averages the garment half in float32 (measured < 1e-5); a
// garment half taken from the wrong rows or a mask on the wrong half moves
// the region's colour by more than 0.05.
const tryOnTol = 1e-4

// Person, garment and mask of the try-on tests: 64×48 (8×6 latent cells);
// the mask is the cells of rows 2..4 and columns 1..5, aligned to the
// 8-pixel grid so that the nearest-sampled latent mask is exact.
const tryW, tryH = 64, 48

var tryMaskRect = image.Rect(8, 16, 48, 40)

func tryInputs() (person *image.NRGBA, garment *image.NRGBA, mask *image.Gray) {
	person = testImage(tryW, tryH)
	garment = image.NewNRGBA(image.Rect(0, 0, tryW, tryH))
	for y := range tryH {
		for x := range tryW {
			// Stripes whose mean is (100, 140, 120): the region must take the
			// mean, not any one stripe.
			c := color.NRGBA{70, 160, 100, 255}
			if (x/4)%2 == 1 {
				c = color.NRGBA{130, 120, 140, 255}
			}
			garment.SetNRGBA(x, y, c)
		}
	}
	mask = image.NewGray(person.Rect)
	for y := tryMaskRect.Min.Y; y < tryMaskRect.Max.Y; y++ {
		for x := tryMaskRect.Min.X; x < tryMaskRect.Max.X; x++ {
			mask.SetGray(x, y, color.Gray{Y: 255})
		}
	}
	return person, garment, mask
}

// garmentMean is the stripes' mean colour in [0, 1].
var garmentMean = [3]float64{100.0 / 255, 140.0 / 255, 120.0 / 255}

func loadTryOn(t *testing.T, opts Options) *Model {
	t.Helper()
	m, err := LoadTryOn(context.Background(), testRuntime(t), contract(t, "oracle-catvton"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestTryOnOracle: the try-on region takes bias + w·(garment mean − bias)
// (the garment's mean colour at guidance 1; the unconditional row, whose
// garment half is zeros, decodes to the VAE bias), outside the mask the
// person's pixels come back exactly, and the UNet's hidden states are zeros
// (the oracle adds their mean inside the mask).
func TestTryOnOracle(t *testing.T) {
	m := loadTryOn(t, Options{})
	var o oracle
	b, err := os.ReadFile(filepath.Join(contract(t, "oracle-catvton"), "fashiond_oracle.json"))
	if err == nil {
		err = json.Unmarshal(b, &o)
	}
	if err != nil || len(o.VAE.Bias) != 3 {
		t.Fatalf("fashiond_oracle.json: %v", err)
	}
	person, garment, mask := tryInputs()
	for _, w := range []float64{1, 2, 2.5} {
		res, err := m.TryOn(context.Background(), TryOnRequest{Person: person, Garment: garment, Mask: mask,
			Guidance: w, Steps: 10, Method: scheduler.Euler, Seed: 5, Width: tryW, Height: tryH})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != ModeTryOn || res.Image.Rect != person.Rect || res.Timings.Calls != 10 {
			t.Fatalf("mode %s, image %v, %d calls", res.Mode, res.Image.Rect, res.Timings.Calls)
		}
		for c := range 3 {
			b := o.VAE.Bias[c]
			want := ((b+w*((2*garmentMean[c]-1)-b))/2 + 0.5)
			for y := tryMaskRect.Min.Y; y < tryMaskRect.Max.Y; y++ {
				for x := tryMaskRect.Min.X; x < tryMaskRect.Max.X; x++ {
					if d := math.Abs(float64(res.Pixels[c*tryW*tryH+y*tryW+x]) - want); d > tryOnTol {
						t.Fatalf("guidance %g: pixel (%d,%d,%d) %.5f, want %.5f", w, x, y, c, res.Pixels[c*tryW*tryH+y*tryW+x], want)
					}
				}
			}
		}
		checkOutsideUnchanged(t, person, res.Image)
	}
}

// checkOutsideUnchanged: outside the mask the result is the person's own
// pixels.
func checkOutsideUnchanged(t *testing.T, person, out *image.NRGBA) {
	t.Helper()
	for y := range tryH {
		for x := range tryW {
			if !image.Pt(x, y).In(tryMaskRect) && out.NRGBAAt(x, y) != person.NRGBAAt(x, y) {
				t.Fatalf("pixel (%d,%d) outside the mask is %v, the person's %v", x, y, out.NRGBAAt(x, y), person.NRGBAAt(x, y))
			}
		}
	}
}

// TestTryOnDefaultsAndSeeds: the folder's scheduler (DDIM, which keeps some
// of the noise) and fashiond.json's steps and size; the same seed gives the
// same pixels, another seed other pixels, and the region still averages to
// the garment's colour within 2 levels.
func TestTryOnDefaultsAndSeeds(t *testing.T) {
	m := loadTryOn(t, Options{})
	person, garment, mask := tryInputs()
	run := func(seed uint64) *Result {
		res, err := m.TryOn(context.Background(), TryOnRequest{Person: person, Garment: garment, Mask: mask, Seed: seed, Width: tryW, Height: tryH})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(11), run(11), run(12)
	if a.Method != scheduler.DDIM || a.Timings.Calls != 30 {
		t.Fatalf("method %s, %d calls; want the folder's ddim and fashiond.json's 30 steps", a.Method, a.Timings.Calls)
	}
	if d := maxDiff(a.Pixels, widen(b.Pixels)); d != 0 {
		t.Fatalf("the same seed differs by %.3g", d)
	}
	if d := maxDiff(a.Pixels, widen(c.Pixels)); d < 1e-3 {
		t.Fatalf("seeds 11 and 12 differ by only %.3g", d)
	}
	for ch := range 3 {
		s, n := 0.0, 0
		for y := tryMaskRect.Min.Y; y < tryMaskRect.Max.Y; y++ {
			for x := tryMaskRect.Min.X; x < tryMaskRect.Max.X; x++ {
				s += float64(a.Pixels[ch*tryW*tryH+y*tryW+x])
				n++
			}
		}
		if d := math.Abs(s/float64(n)-garmentMean[ch]) * 255; d > 2 {
			t.Fatalf("channel %d: region mean is %.1f levels from the garment's", ch, d)
		}
	}
	checkOutsideUnchanged(t, person, a.Image)
	full, err := m.TryOn(context.Background(), TryOnRequest{Person: person, Garment: garment, Mask: mask, Steps: 1})
	if err != nil || full.Image.Rect.Dx() != 192 || full.Image.Rect.Dy() != 256 {
		t.Fatalf("default size: %v, %v; want fashiond.json's 192x256", err, full.Image.Rect)
	}
}

// TestTryOnBatchedEqualsUnbatched: concurrent try-on jobs share UNet calls
// and get their unbatched results; a cancelled one stops with
// context.Canceled and leaves the others unharmed.
func TestTryOnBatchedEqualsUnbatched(t *testing.T) {
	solo := loadTryOn(t, Options{})
	batched := loadTryOn(t, Options{Batching: true})
	person, garment, mask := tryInputs()
	reqs := []TryOnRequest{
		{Guidance: 2.5, Steps: 6, Seed: 1},
		{Guidance: 1, Steps: 6, Seed: 2, Method: scheduler.Euler},
		{Guidance: 2, Steps: 6, Seed: 3},
	}
	out := make([]*Result, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		r := reqs[i]
		r.Person, r.Garment, r.Mask, r.Width, r.Height = person, garment, mask, tryW, tryH
		reqs[i] = r
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if i == 2 {
			r.Progress = func(done, _ int) {
				if done == 2 {
					cancel()
				}
			}
		}
		wg.Go(func() { out[i], errs[i] = batched.TryOn(ctx, r) })
	}
	wg.Wait()
	if !errors.Is(errs[2], context.Canceled) || out[2] != nil {
		t.Fatalf("cancelled job: %v", errs[2])
	}
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want, err := solo.TryOn(context.Background(), reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(out[i].Pixels, widen(want.Pixels)); d > 1e-5 {
			t.Fatalf("job %d batched differs from unbatched by %.3g", i, d)
		}
	}
	if st := batched.Stats(); st.Rows <= st.Calls {
		t.Fatalf("%d UNet calls carried %d rows: nothing was batched", st.Calls, st.Rows)
	}
}

// TestTryOnModelRefusesPrompts: a try-on model does not Generate, and a
// plain model does not TryOn.
func TestTryOnModelRefusesPrompts(t *testing.T) {
	m := loadTryOn(t, Options{})
	if _, err := m.Generate(context.Background(), Request{Prompt: "x", Width: 64, Height: 64}); err == nil || !contains(err.Error(), "try-on model", "TryOn") {
		t.Fatalf("Generate on a try-on model: %v", err)
	}
	person, garment, mask := tryInputs()
	plain := loadModel(t, testRuntime(t), contract(t, "oracle-inpaint"), Options{})
	if _, err := plain.TryOn(context.Background(), TryOnRequest{Person: person, Garment: garment, Mask: mask}); err == nil || !contains(err.Error(), "inpainting model", FileLayout) {
		t.Fatalf("TryOn on an inpainting model: %v", err)
	}
	if _, err := m.TryOn(context.Background(), TryOnRequest{Person: person, Garment: garment}); err == nil || !contains(err.Error(), "mask") {
		t.Fatalf("no mask: %v", err)
	}
	if _, err := Load(context.Background(), testRuntime(t), contract(t, "oracle-catvton"), Options{}); err == nil || !contains(err.Error(), FileLayout, "LoadTryOn") {
		t.Fatalf("Load of a try-on folder: %v", err)
	}
}
