package diffusion

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"time"

	"fashiond/diffusion/scheduler"
)

// Request defaults and limits. Zero values in a Request take the defaults.
const (
	DefaultSteps       = 30
	DefaultGuidance    = 7.5
	DefaultStrength    = 0.8 // img2img; inpainting defaults to 1
	MaxSteps           = 200
	MaxSide            = 2048
	MaxPromptRunes     = 2000
	maxGuidance        = 50
	seedStreamConstant = 0x9E3779B97F4A7C15
)

// Request is one generation. Image alone is img2img; Image and Mask is
// inpainting (white = repaint). The zero value of every number takes its
// default.
type Request struct {
	Prompt         string
	NegativePrompt string
	// Guidance is the classifier-free guidance scale (default 7.5); 1 or
	// less runs the UNet without guidance (one row per job). For UNets
	// with timestep_cond (LCM) it is the guidance embedding's scale and no
	// unconditional pass is made.
	Guidance float64
	Steps    int            // denoising steps (default 30)
	Method   scheduler.Kind // "" = the folder's scheduler
	Eta      float64        // DDIM's eta
	// Seed makes a run reproducible; with RandomSeed a fresh one is drawn
	// and reported in the Result.
	Seed       uint64
	RandomSeed bool
	// Width and Height in pixels, multiples of the VAE factor (8); zero
	// means the input image's size rounded down, or the model's native
	// size.
	Width, Height int
	Image         image.Image
	Mask          image.Image
	Strength      float64 // img2img and inpainting strength in (0, 1]
	// Progress, when set, is called before each UNet call with the number
	// of calls done and the total.
	Progress func(done, total int)
}

// Mode is what a request asks for.
type Mode string

// The modes of a request.
const (
	ModeText    Mode = "text-to-image"
	ModeImage   Mode = "img2img"
	ModeInpaint Mode = "inpainting"
)

// Timings says where the time of one generation went.
type Timings struct {
	Tokenize    time.Duration
	TextEncoder time.Duration
	VAEEncode   time.Duration
	Denoise     time.Duration
	// UNet is the part of Denoise spent inside ONNX Runtime calls of the
	// batches this job was in (shared with the other jobs of the batch).
	UNet time.Duration
	// JoinWait is the part of Denoise spent waiting for other jobs to
	// join (Options.JoinWindow).
	JoinWait  time.Duration
	VAEDecode time.Duration
	Total     time.Duration
	Calls     int // UNet calls (steps, PNDM's repeat included)
}

// Result is one generated image.
type Result struct {
	Image *image.NRGBA
	// Pixels is the decoded image as [3][H][W] floats in [0, 1] before
	// quantisation and before the inpainting composite.
	Pixels  []float32
	Seed    uint64
	Mode    Mode
	Method  scheduler.Kind
	Timings Timings
}

// normalise fills defaults and checks the request against the model. Errors
// name the field.
func (m *Model) normalise(req Request) (Request, Mode, error) {
	mode := ModeText
	switch {
	case req.Mask != nil && req.Image == nil:
		return req, "", fmt.Errorf("diffusion: mask needs an image (the picture to repaint)")
	case req.Mask != nil:
		mode = ModeInpaint
	case req.Image != nil:
		mode = ModeImage
	}
	if err := m.checkMode(mode); err != nil {
		return req, "", err
	}
	if n := len([]rune(req.Prompt)) + len([]rune(req.NegativePrompt)); n > MaxPromptRunes {
		return req, "", fmt.Errorf("diffusion: prompt and negative_prompt have %d characters together, at most %d", n, MaxPromptRunes)
	}
	if req.Steps == 0 {
		req.Steps = DefaultSteps
	}
	if req.Steps < 1 || req.Steps > MaxSteps {
		return req, "", fmt.Errorf("diffusion: steps %d must be in 1..%d", req.Steps, MaxSteps)
	}
	if req.Guidance == 0 {
		req.Guidance = DefaultGuidance
	}
	if math.IsNaN(req.Guidance) || req.Guidance < 0 || req.Guidance > maxGuidance {
		return req, "", fmt.Errorf("diffusion: guidance %v must be in 0..%d", req.Guidance, maxGuidance)
	}
	if err := m.normaliseStrength(&req, mode); err != nil {
		return req, "", err
	}
	if err := m.normaliseSize(&req); err != nil {
		return req, "", err
	}
	if req.RandomSeed {
		req.Seed = rand.Uint64()
	}
	return req, mode, nil
}

// checkMode refuses what the model's graphs cannot do.
func (m *Model) checkMode(mode Mode) error {
	switch {
	case m.sig.task == TryOn:
		return fmt.Errorf("diffusion: model %s is a try-on model (%s layout %s): it takes a person, a garment and a mask (TryOn), not a prompt", m.name, FileLayout, LayoutCatVTON)
	case m.sig.task == Inpainting && mode != ModeInpaint:
		return fmt.Errorf("diffusion: model %s is an inpainting model (9-channel UNet): it needs an image and a mask", m.name)
	case mode != ModeText && m.vaeEnc == nil:
		return fmt.Errorf("diffusion: model %s has no %s/%s: %s needs it", m.name, dirVAEEncoder, fileGraph, mode)
	}
	return nil
}

func (m *Model) normaliseStrength(req *Request, mode Mode) error {
	if req.Strength == 0 {
		req.Strength = 1
		if mode == ModeImage {
			req.Strength = DefaultStrength
		}
	}
	if !(req.Strength > 0 && req.Strength <= 1) {
		return fmt.Errorf("diffusion: strength %v must be in (0, 1]", req.Strength)
	}
	if mode == ModeText && req.Strength != 1 {
		return fmt.Errorf("diffusion: strength needs an image (img2img)")
	}
	return nil
}

// normaliseSize takes the size from the image or the model and checks it.
func (m *Model) normaliseSize(req *Request) error {
	f := m.sig.vaeFactor
	if req.Width == 0 && req.Height == 0 {
		if req.Image != nil {
			b := req.Image.Bounds()
			req.Width, req.Height = b.Dx()/f*f, b.Dy()/f*f
		} else {
			req.Width, req.Height = m.DefaultSize(), m.DefaultSize()
		}
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"width", req.Width}, {"height", req.Height}} {
		if d.v < f || d.v > MaxSide || d.v%f != 0 {
			return fmt.Errorf("diffusion: %s %d must be a multiple of %d in %d..%d", d.name, d.v, f, f, MaxSide)
		}
	}
	return nil
}

// newRNG is the job's generator: PCG from math/rand/v2 seeded with (seed,
// a fixed stream constant); Gaussian values by its ziggurat NormFloat64.
// The same seed gives the same image with the same model, size, method and
// steps on any machine; it does not reproduce PyTorch's images.
func newRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seedStreamConstant))
}

// gaussian draws n standard normal values.
func gaussian(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64())
	}
	return out
}
