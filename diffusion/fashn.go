package diffusion

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"fashiond/inference"
)

// The transformer graph of a fashn-vton export (scripts/export/fashn_vton.py
// writes it): TryOnModel.forward with the conditional-dropout mask folded
// away (the engine feeds the unconditional rows zero images and class 0,
// which is what the mask does).
const (
	inFlowX          = "x"                  // [B,3,H,W] the noisy image at time t
	inFlowTimes      = "times"              // [B] time in [0, 1]
	inFlowPerson     = "ca_images"          // [B,3,H,W] person in [-1, 1]
	inFlowGarment    = "garment_images"     // [B,3,H,W] garment in [-1, 1]
	inFlowPersonPose = "person_poses"       // [B,1,H,W] pose map in [-1, 1]
	inFlowGarmPose   = "garment_poses"      // [B,1,H,W] pose map in [-1, 1]
	inFlowCategory   = "garment_categories" // [B] int64 class label
	outFlowVelocity  = "velocity"           // [B,3,H,W]
	fashnChannels    = 3
)

// fashnPlanes are the conditioning planes in the graph's input order after
// x and times, with their channel counts.
var fashnPlanes = []struct {
	name     string
	channels int
}{{inFlowPerson, 3}, {inFlowGarment, 3}, {inFlowPersonPose, 1}, {inFlowGarmPose, 1}}

// FashnModel is an installed fashn-vton export loaded on ONNX Runtime. It is
// safe for concurrent TryOn calls; concurrent jobs share transformer calls
// when Options.Batching is on. Close releases it.
type FashnModel struct {
	name   string
	dir    string
	opts   Options
	layout FashnLayout
	net    *graph
	batch  *flowBatcher
	stats  struct{ calls, rows, runNanos int64 }
	mu     sync.Mutex
	closed bool
}

// LoadFashnVTON loads a fashn-vton folder (fashiond.json and
// transformer/model.onnx with its external data). Any part that does not
// fit is an error naming the file, the field or the tensor.
func LoadFashnVTON(ctx context.Context, rt *inference.Runtime, dir string, opts Options) (*FashnModel, error) {
	if rt == nil {
		return nil, errors.New("diffusion: loading a fashn-vton model needs a runtime")
	}
	if opts.Name == "" {
		opts.Name = sanitizeName(filepath.Base(filepath.Clean(dir)))
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	m := &FashnModel{name: opts.Name, dir: dir, opts: opts}
	if err := m.load(ctx, rt); err != nil {
		m.Close()
		return nil, fmt.Errorf("diffusion: fashn-vton model %s (%s): %w", opts.Name, dir, err)
	}
	m.batch = newFlowBatcher(m, opts.MaxBatch, opts.Batching, m.observe)
	return m, nil
}

func (m *FashnModel) load(ctx context.Context, rt *inference.Runtime) error {
	var err error
	if m.layout, err = readFashnLayout(m.dir); err != nil {
		return err
	}
	pick := func(rel string, ins, outs []inference.IOInfo) ([]inference.IOInfo, []inference.IOInfo, error) {
		return pickFashn(rel, ins, outs, m.layout)
	}
	m.net, err = loadGraph(ctx, rt, m.dir, dirTransformer, m.opts.Device, pick)
	return err
}

// pickFashn checks the transformer's inputs and output against the layout.
func pickFashn(rel string, ins, outs []inference.IOInfo, l FashnLayout) ([]inference.IOInfo, []inference.IOInfo, error) {
	image4 := func(kind string, list []inference.IOInfo, name string, c int) (inference.IOInfo, error) {
		v, err := requireIO(rel, kind, list, name, []int{4}, floatTypes...)
		if err != nil {
			return v, err
		}
		for k, want := range []int64{-1, int64(c), int64(l.Height), int64(l.Width)} {
			if d := v.Dims[k]; want > 0 && d > 0 && d != want {
				return v, fmt.Errorf("%s: %s %s: dimension %d is %d, but %s declares %d (channels %d, %dx%d)",
					rel, kind, describe(v), k, d, FileLayout, want, c, l.Width, l.Height)
			}
		}
		return v, nil
	}
	x, err := image4("input", ins, inFlowX, fashnChannels)
	if err != nil {
		return nil, nil, err
	}
	ts, err := requireIO(rel, "input", ins, inFlowTimes, []int{1}, floatTypes...)
	if err != nil {
		return nil, nil, err
	}
	use := []inference.IOInfo{x, ts}
	for _, p := range fashnPlanes {
		v, err := image4("input", ins, p.name, p.channels)
		if err != nil {
			return nil, nil, err
		}
		use = append(use, v)
	}
	cat, err := requireIO(rel, "input", ins, inFlowCategory, []int{1}, inference.Int64)
	if err != nil {
		return nil, nil, err
	}
	use = append(use, cat)
	if err := unknownInputs(rel, ins, names(use)...); err != nil {
		return nil, nil, err
	}
	out, err := image4("output", outs, outFlowVelocity, fashnChannels)
	if err != nil {
		return nil, nil, err
	}
	return use, []inference.IOInfo{out}, nil
}

// velocity implements flowNet: one transformer call over the rows.
func (m *FashnModel) velocity(ctx context.Context, rows []flowRow) ([]float32, time.Duration, error) {
	B := int64(len(rows))
	H, W := int64(m.layout.Height), int64(m.layout.Width)
	per := int(fashnChannels * H * W)
	in := make([]inference.Value, 0, len(m.net.in))
	x := make([]float32, 0, len(rows)*per)
	ts := make([]float32, 0, len(rows))
	cats := make([]int64, 0, len(rows))
	for _, r := range rows {
		if len(r.x) != per {
			return nil, 0, fmt.Errorf("diffusion: %s: a row has %d values, want %d", m.net.rel, len(r.x), per)
		}
		x = append(x, r.x...)
		ts = append(ts, float32(r.t))
		cats = append(cats, r.cond.class)
	}
	in = append(in, inference.Value{DType: m.net.in[0].DType, Shape: []int64{B, fashnChannels, H, W}, F32: x},
		inference.Value{DType: m.net.in[1].DType, Shape: []int64{B}, F32: ts})
	for k, p := range fashnPlanes {
		v := make([]float32, 0, len(rows)*p.channels*int(H*W))
		for _, r := range rows {
			v = append(v, r.cond.planes[k]...)
		}
		in = append(in, inference.Value{DType: m.net.in[2+k].DType, Shape: []int64{B, int64(p.channels), H, W}, F32: v})
	}
	in = append(in, inference.Value{DType: inference.Int64, Shape: []int64{B}, I64: cats})
	t0 := time.Now()
	out, err := m.net.run(ctx, in, [][]int64{{B, fashnChannels, H, W}})
	ran := time.Since(t0)
	if err != nil {
		return nil, ran, fmt.Errorf("diffusion: %s: %w", m.net.rel, err)
	}
	if len(out[0].F32) != len(rows)*per {
		return nil, ran, fmt.Errorf("diffusion: %s returned shape %v, want [%d 3 %d %d]", m.net.rel, out[0].Shape, B, H, W)
	}
	return out[0].F32, ran, nil
}

func (m *FashnModel) observe(rows int, took time.Duration, err error) {
	m.mu.Lock()
	m.stats.calls++
	m.stats.rows += int64(rows)
	m.stats.runNanos += int64(took)
	m.mu.Unlock()
	if m.opts.Observer != nil {
		m.opts.Observer.UNetCall(m.name, rows, m.opts.MaxBatch, took, err)
	}
}

// Name is the model's name.
func (m *FashnModel) Name() string { return m.name }

// Layout is the model's fashiond.json declaration.
func (m *FashnModel) Layout() FashnLayout { return m.layout }

// DType is the float type of the transformer's tensors.
func (m *FashnModel) DType() string { return m.net.in[0].DType.String() }

// Device is where the transformer runs ("cpu" or "cuda").
func (m *FashnModel) Device() string { return m.net.sess.Device() }

// Stats are the transformer calls so far, their rows and their time.
func (m *FashnModel) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Calls: m.stats.calls, Rows: m.stats.rows, UNet: time.Duration(m.stats.runNanos)}
}

// Close releases the session. Idempotent and nil-safe.
func (m *FashnModel) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return m.net.Close()
}

// FashnRequest is one FASHN VTON generation on prepared inputs (the model's
// size, scaled to [-1, 1]; models.FashnInputs prepares them from photos).
// Zero numbers take fashiond.json's defaults.
type FashnRequest struct {
	// Person is the person photo (the reference's "clothing-agnostic"
	// image; unmasked in its segmentation-free mode), Garment the garment
	// photo: 3×H×W planes each.
	Person, Garment []float32
	// PersonPose and GarmentPose are the grayscale pose maps, 1×H×W.
	PersonPose, GarmentPose []float32
	// Category is tops, bottoms or one-pieces.
	Category string
	Steps    int
	Guidance float64
	// SkipGuidanceLast overrides fashiond.json's skip_guidance_last.
	SkipGuidanceLast *int
	// Samples is the number of pictures (default 1); sample k uses seed
	// Seed+k, so each has its own noise.
	Samples    int
	Seed       uint64
	RandomSeed bool
	Progress   func(done, total int)

	// noise, when set (tests), replaces the initial noise per sample.
	noise [][]float32
}

// maxFashnSamples bounds the samples of one request.
const maxFashnSamples = 8

// FashnResult is what a FASHN VTON generation made.
type FashnResult struct {
	// Samples are the pictures as 3×H×W planes in [-1, 1], one per seed.
	Samples  [][]float32
	Seeds    []uint64
	Steps    int
	Guidance float64
	SkipLast int
	Schedule string
	Timings  Timings
}

// TryOn samples req.Samples pictures of the person in the garment.
func (m *FashnModel) TryOn(ctx context.Context, req FashnRequest) (*FashnResult, error) {
	start := time.Now()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("diffusion: model %s is closed", m.name)
	}
	g, cond, err := m.normalise(&req)
	if err != nil {
		return nil, err
	}
	sched := ShiftedLinear{Mu: m.layout.Mu}
	tokens := (m.layout.Width / m.layout.PatchSize) * (m.layout.Height / m.layout.PatchSize)
	times, err := sched.Times(req.Steps, tokens)
	if err != nil {
		return nil, err
	}
	per := fashnChannels * m.layout.Width * m.layout.Height
	res := &FashnResult{Steps: req.Steps, Guidance: g.Scale, SkipLast: g.SkipLast, Schedule: sched.String()}
	noise := req.noise
	for k := range req.Samples {
		seed := req.Seed + uint64(k)
		res.Seeds = append(res.Seeds, seed)
		if req.noise == nil {
			noise = append(noise, gaussian(newRNG(seed), per))
		}
	}
	uncond := &flowCond{planes: make([][]float32, len(fashnPlanes))}
	for k, p := range cond.planes {
		uncond.planes[k] = make([]float32, len(p))
	}
	j := newFlowJob(noise, Euler{}, times, g, cond, uncond)
	j.progress = req.Progress
	if err := sampleFlow(ctx, m.batch, j); err != nil {
		return nil, err
	}
	for _, x := range j.x {
		for _, v := range x {
			if math.IsNaN(float64(v)) {
				return nil, fmt.Errorf("diffusion: %s produced NaN", m.net.rel)
			}
		}
	}
	res.Samples = j.x
	res.Timings = j.tm
	res.Timings.Total = time.Since(start)
	return res, nil
}

// normalise fills the defaults and checks the request; errors name the
// field.
func (m *FashnModel) normalise(req *FashnRequest) (FlowGuidance, *flowCond, error) {
	l := m.layout
	if req.Steps == 0 {
		req.Steps = l.Steps
	}
	if req.Steps < 1 || req.Steps > MaxSteps {
		return FlowGuidance{}, nil, fmt.Errorf("diffusion: steps %d must be in 1..%d", req.Steps, MaxSteps)
	}
	if req.Guidance == 0 {
		req.Guidance = l.Guidance
	}
	g := FlowGuidance{Scale: req.Guidance, SkipLast: min(*l.SkipGuidanceLast, req.Steps)}
	if req.SkipGuidanceLast != nil {
		g.SkipLast = *req.SkipGuidanceLast
	}
	if err := g.check(req.Steps); err != nil {
		return g, nil, err
	}
	if req.Samples == 0 {
		req.Samples = 1
	}
	if req.Samples < 1 || req.Samples > maxFashnSamples {
		return g, nil, fmt.Errorf("diffusion: samples %d must be in 1..%d", req.Samples, maxFashnSamples)
	}
	if req.noise != nil && len(req.noise) != req.Samples {
		return g, nil, fmt.Errorf("diffusion: %d noise planes for %d samples", len(req.noise), req.Samples)
	}
	class, ok := l.Categories[req.Category]
	if !ok {
		return g, nil, fmt.Errorf("diffusion: category %q must be one of %v", req.Category, fashnCategories)
	}
	if req.RandomSeed {
		req.Seed = rand.Uint64()
	}
	hw := l.Width * l.Height
	cond := &flowCond{class: int64(class)}
	for k, p := range [][]float32{req.Person, req.Garment, req.PersonPose, req.GarmentPose} {
		if want := fashnPlanes[k].channels * hw; len(p) != want {
			return g, nil, fmt.Errorf("diffusion: %s has %d values, want %d (%d×%d×%d)", fashnPlanes[k].name, len(p), want, fashnPlanes[k].channels, l.Height, l.Width)
		}
		cond.planes = append(cond.planes, p)
	}
	return g, cond, nil
}

// FashnImage converts a sample (3×H×W in [-1, 1]) to an image the way the
// reference's tensor_to_pil does: (v+1)/2·255 truncated to a byte.
func FashnImage(planes []float32, w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	hw := w * h
	for p := range hw {
		for c := range 3 {
			v := (planes[c*hw+p] + 1) * 0.5 * 255 // float32, as torch
			img.Pix[4*p+c] = uint8(max(0, min(255, v)))
		}
		img.Pix[4*p+3] = 255
	}
	return img
}
