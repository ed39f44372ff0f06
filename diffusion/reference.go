package diffusion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"

	"fashiond/diffusion/scheduler"
)

// A reference folder (written by scripts/export/sd.py --reference) holds a
// picture a reference implementation made from an export's original
// weights with the engine's noise for a seed, so an operator can check
// that fashiond samples their export as the reference does.
const (
	FileReference = "reference.json"
	// DefaultReferenceTolerance is the largest |fashiond − reference| on
	// pixels in [0, 1] accepted when reference.json gives none. A real
	// network's float32 ONNX graphs match PyTorch to about 1e-5 per call,
	// and a sampling run amplifies that; 2e-2 is well under what a wrong
	// scheduler constant, scaling factor or guidance formula produces.
	DefaultReferenceTolerance = 2e-2
	maxReferenceBytes         = 64 << 10
)

// Reference is reference.json.
type Reference struct {
	Mode           Mode    `json:"mode"`
	Prompt         string  `json:"prompt"`
	NegativePrompt string  `json:"negative_prompt"`
	Guidance       float64 `json:"guidance"`
	Steps          int     `json:"steps"`
	Method         string  `json:"method"`
	Eta            float64 `json:"eta"`
	Seed           uint64  `json:"seed"`
	Width          int     `json:"width"`
	Height         int     `json:"height"`
	Tolerance      float64 `json:"tolerance"`
	// Expected is the reference picture, a PNG (16-bit keeps its
	// precision); Noise the engine's noise stream it was made with.
	Expected string `json:"expected"`
	Noise    string `json:"noise"`
	// MadeBy says what made the picture (free text, shown in reports).
	MadeBy string `json:"made_by"`
}

// ReferenceReport is the outcome of CheckReference.
type ReferenceReport struct {
	MaxDiff, MeanDiff, Tolerance float64
	Values                       int
	MadeBy                       string
}

// OK says whether the largest difference is within the tolerance.
func (r ReferenceReport) OK() bool { return r.MaxDiff <= r.Tolerance }

func (r ReferenceReport) String() string {
	verdict := "ok"
	if !r.OK() {
		verdict = "FAILED"
	}
	return fmt.Sprintf("max |fashiond - reference| = %.3g (mean %.3g) over %d pixel values in [0,1], tolerance %.3g: %s",
		r.MaxDiff, r.MeanDiff, r.Values, r.Tolerance, verdict)
}

// ReadReference reads and checks dir/reference.json: its fields, that the
// noise file is the engine's stream for the seed (bit for bit) and that the
// expected picture has the stated size. It returns the expected pixels as
// [3][H][W] in [0, 1].
func ReadReference(dir string) (Reference, []float32, error) {
	var ref Reference
	b, err := os.ReadFile(filepath.Join(dir, FileReference))
	if err != nil {
		return ref, nil, err
	}
	if len(b) > maxReferenceBytes {
		return ref, nil, fmt.Errorf("%s: %d bytes, at most %d", FileReference, len(b), maxReferenceBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		return ref, nil, fmt.Errorf("%s: invalid: %w", FileReference, err)
	}
	if err := ref.check(); err != nil {
		return ref, nil, fmt.Errorf("%s: %w", FileReference, err)
	}
	if err := checkReferenceNoise(filepath.Join(dir, ref.Noise), ref.Seed); err != nil {
		return ref, nil, err
	}
	px, err := readPlanesPNG(filepath.Join(dir, ref.Expected), ref.Width, ref.Height)
	return ref, px, err
}

func (r *Reference) check() error {
	if r.Mode == "" {
		r.Mode = ModeText
	}
	if r.Mode != ModeText {
		return fmt.Errorf("mode %q: only %q references are supported", r.Mode, ModeText)
	}
	if r.Tolerance == 0 {
		r.Tolerance = DefaultReferenceTolerance
	}
	if !(r.Tolerance > 0 && r.Tolerance <= 1) {
		return fmt.Errorf("tolerance %v must be in (0, 1]", r.Tolerance)
	}
	if r.Width <= 0 || r.Height <= 0 || r.Width > MaxSide || r.Height > MaxSide {
		return fmt.Errorf("width %d and height %d must be in 1..%d", r.Width, r.Height, MaxSide)
	}
	if r.Method != "" {
		if _, err := scheduler.ParseKind(r.Method); err != nil {
			return fmt.Errorf("method: %w", err)
		}
	}
	if r.Expected == "" {
		r.Expected = "expected.png"
	}
	if r.Noise == "" {
		r.Noise = "noise.f32"
	}
	for _, f := range []string{r.Expected, r.Noise} {
		if filepath.IsAbs(f) || filepath.Base(f) != f {
			return fmt.Errorf("file %q must be a plain name inside the reference folder", f)
		}
	}
	return nil
}

// checkReferenceNoise refuses a noise file that is not the engine's stream
// for seed: the picture would then not be comparable.
func checkReferenceNoise(path string, seed uint64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	got, err := ReadFloats(b)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if len(got) == 0 {
		return fmt.Errorf("%s: empty", filepath.Base(path))
	}
	want := Noise(seed, len(got))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return fmt.Errorf("%s: value %d is %v but fashiond's noise for seed %d has %v there (write it with `fashiond models noise --seed %d`)",
				filepath.Base(path), i, got[i], seed, want[i], seed)
		}
	}
	return nil
}

// readPlanesPNG reads a PNG of exactly w×h as [3][H][W] in [0, 1].
func readPlanesPNG(path string, w, h int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		return nil, fmt.Errorf("%s is %dx%d, %s says %dx%d", filepath.Base(path), b.Dx(), b.Dy(), FileReference, w, h)
	}
	out := make([]float32, 3*w*h)
	for y := range h {
		for x := range w {
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			for c, v := range []uint32{r, g, bl} {
				out[c*w*h+y*w+x] = float32(v) / 0xffff
			}
		}
	}
	return out, nil
}

// CheckReference generates the reference folder's picture with the same
// seed and settings and compares the decoded pixels with it.
func (m *Model) CheckReference(ctx context.Context, dir string) (ReferenceReport, error) {
	ref, want, err := ReadReference(dir)
	if err != nil {
		return ReferenceReport{}, fmt.Errorf("diffusion: reference %s: %w", dir, err)
	}
	res, err := m.Generate(ctx, Request{Prompt: ref.Prompt, NegativePrompt: ref.NegativePrompt, Guidance: ref.Guidance,
		Steps: ref.Steps, Method: scheduler.Kind(ref.Method), Eta: ref.Eta, Seed: ref.Seed, Width: ref.Width, Height: ref.Height})
	if err != nil {
		return ReferenceReport{}, err
	}
	rep := ReferenceReport{Tolerance: ref.Tolerance, Values: len(want), MadeBy: ref.MadeBy}
	for i, v := range want {
		d := math.Abs(float64(res.Pixels[i]) - float64(v))
		rep.MaxDiff = math.Max(rep.MaxDiff, d)
		rep.MeanDiff += d
	}
	rep.MeanDiff /= float64(len(want))
	return rep, nil
}
