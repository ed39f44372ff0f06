package diffusion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
)

// FileLayout is the small file a try-on model's folder carries to declare
// its layout (docs/GENERATIVE.md, "CatVTON").
const FileLayout = "fashiond.json"

// The layouts and concatenation axes fashiond.json may name.
const (
	LayoutCatVTON = "catvton"
	AxisHeight    = "height"
)

// CatVTON's own defaults (its public inference code: person 768×1024, 50
// DDIM steps, guidance 2.5), taken when fashiond.json leaves a field out.
const (
	defaultTryOnWidth    = 768
	defaultTryOnHeight   = 1024
	defaultTryOnSteps    = 50
	defaultTryOnGuidance = 2.5
	// maxLayoutBytes bounds fashiond.json (a few hundred bytes in practice).
	maxLayoutBytes = 64 << 10
	// minTryOnSide is the smallest person side (8 latent cells at factor 8).
	minTryOnSide = 64
)

// Layout is what fashiond.json declares. Every field but layout has a
// default; unknown fields are refused.
type Layout struct {
	// Layout is the model family; only "catvton" is supported.
	Layout string `json:"layout"`
	// ConcatAxis is the axis along which person and garment are joined in
	// latent space; only "height" (CatVTON's released weights) is
	// supported.
	ConcatAxis string `json:"concat_axis"`
	// TextEncoder must be false: the layout has no text conditioning (the
	// UNet's encoder_hidden_states, when declared, is fed zeros).
	TextEncoder bool `json:"text_encoder"`
	// PersonWidth and PersonHeight are the person image's size the model
	// runs at (pixels, multiples of 8); the garment is resized to it too.
	PersonWidth  int `json:"person_width"`
	PersonHeight int `json:"person_height"`
	// Steps and Guidance are the model's recommended sampling defaults.
	Steps    int     `json:"steps"`
	Guidance float64 `json:"guidance"`
}

// ParseLayout decodes and validates fashiond.json. Errors name the file
// and the field.
func ParseLayout(b []byte) (Layout, error) {
	var l Layout
	if err := decodeLayout(b, &l); err != nil {
		return l, err
	}
	l.defaults()
	return l, l.check()
}

// decodeLayout decodes a fashiond.json of at most maxLayoutBytes into v:
// one JSON object, no unknown fields, nothing after it.
func decodeLayout(b []byte, v any) error {
	if len(b) > maxLayoutBytes {
		return fmt.Errorf("%s: %d bytes, at most %d", FileLayout, len(b), maxLayoutBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: invalid: %w", FileLayout, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: invalid: data after the JSON object", FileLayout)
	}
	return nil
}

// readLayoutFile reads dir/fashiond.json; a missing file is an error
// saying why the layout needs it.
func readLayoutFile(dir, why string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileLayout))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: missing (%s)", FileLayout, why)
		}
		return nil, fmt.Errorf("%s: %w", FileLayout, err)
	}
	return b, nil
}

// defaults fills the fields left out.
func (l *Layout) defaults() {
	if l.ConcatAxis == "" {
		l.ConcatAxis = AxisHeight
	}
	if l.PersonWidth == 0 && l.PersonHeight == 0 {
		l.PersonWidth, l.PersonHeight = defaultTryOnWidth, defaultTryOnHeight
	}
	if l.Steps == 0 {
		l.Steps = defaultTryOnSteps
	}
	if l.Guidance == 0 {
		l.Guidance = defaultTryOnGuidance
	}
}

// check validates the filled layout field by field.
func (l *Layout) check() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: field %q: %s", FileLayout, field, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Layout == "":
		return bad("layout", "missing (supported: %s)", LayoutCatVTON)
	case l.Layout != LayoutCatVTON:
		return bad("layout", "unknown layout %q (supported: %s)", l.Layout, LayoutCatVTON)
	case l.ConcatAxis != AxisHeight:
		return bad("concat_axis", "%q is not supported (supported: %s, as CatVTON's released weights)", l.ConcatAxis, AxisHeight)
	case l.TextEncoder:
		return bad("text_encoder", "true is not supported: the %s layout has no text conditioning", l.Layout)
	case !validSide(l.PersonWidth):
		return bad("person_width", "%d must be a multiple of 8 in %d..%d", l.PersonWidth, minTryOnSide, MaxSide)
	case !validSide(l.PersonHeight):
		return bad("person_height", "%d must be a multiple of 8 in %d..%d", l.PersonHeight, minTryOnSide, MaxSide)
	case l.Steps < 1 || l.Steps > MaxSteps:
		return bad("steps", "%d must be in 1..%d", l.Steps, MaxSteps)
	case math.IsNaN(l.Guidance) || l.Guidance < 0 || l.Guidance > maxGuidance:
		return bad("guidance", "%v must be in 0..%d", l.Guidance, maxGuidance)
	}
	return nil
}

func validSide(v int) bool { return v >= minTryOnSide && v <= MaxSide && v%8 == 0 }

// hasLayout says whether dir carries fashiond.json.
func hasLayout(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, FileLayout))
	return err == nil
}

// readLayout reads and validates dir/fashiond.json.
func readLayout(dir string) (Layout, error) {
	b, err := readLayoutFile(dir, "a try-on model's folder declares its layout in it")
	if err != nil {
		return Layout{}, err
	}
	return ParseLayout(b)
}

// readTryOnConfig reads fashiond.json and the graph configs of a try-on
// folder (no text encoder config is needed).
func readTryOnConfig(dir string) (folderConfig, error) {
	l, err := readLayout(dir)
	if err != nil {
		return folderConfig{}, err
	}
	fc, err := readConfigs(dir, false)
	if err != nil {
		return fc, err
	}
	fc.Layout = &l
	return fc, nil
}

// dryRunTryOn is the install-time dry run of a try-on model: one guided
// step at side×side with a gradient person, a flat garment and the lower
// half masked.
func dryRunTryOn(ctx context.Context, m *Model, side int) error {
	person := image.NewGray(image.Rect(0, 0, side, side))
	for i := range person.Pix {
		person.Pix[i] = uint8(i * 255 / len(person.Pix))
	}
	mask := image.NewGray(person.Rect)
	for i := len(mask.Pix) / 2; i < len(mask.Pix); i++ {
		mask.Pix[i] = 255
	}
	garment := &boundedUniform{image.NewUniform(color.Gray{Y: 90}), person.Rect}
	res, err := m.TryOn(ctx, TryOnRequest{Person: person, Garment: garment, Mask: mask, Guidance: 2, Steps: 1, Width: side, Height: side})
	if err != nil {
		return err
	}
	return checkFinite(res)
}
