package diffusion

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"time"

	"fashiond/diffusion/scheduler"
	"fashiond/inference"
)

// TryOn is the task of a try-on model: a folder whose fashiond.json
// declares the catvton layout (a 9-channel inpainting UNet fed the person
// and the garment concatenated along the latent height, no text encoder).
const TryOn Task = "try-on"

// ModeTryOn is the mode of a try-on generation.
const ModeTryOn Mode = "try-on"

// LoadTryOn loads a try-on folder: fashiond.json, the scheduler, the UNet
// and both VAE graphs (text_encoder/ and tokenizer/ may be absent and are
// not loaded). Any part that does not fit is an error naming the file and
// what was expected. The model serves TryOn, not Generate.
func LoadTryOn(ctx context.Context, rt *inference.Runtime, dir string, opts Options) (*Model, error) {
	return open(ctx, rt, dir, opts, "try-on model", (*Model).loadTryOn)
}

// loadFolder loads dir with the loader its layout needs: LoadTryOn when it
// carries fashiond.json, else Load.
func loadFolder(ctx context.Context, rt *inference.Runtime, dir string, opts Options) (*Model, error) {
	if hasLayout(dir) {
		return LoadTryOn(ctx, rt, dir, opts)
	}
	return Load(ctx, rt, dir, opts)
}

func (m *Model) loadTryOn(ctx context.Context, rt *inference.Runtime) error {
	var err error
	if m.cfg, err = readTryOnConfig(m.dir); err != nil {
		return err
	}
	if m.sched, err = readScheduler(m.dir); err != nil {
		return err
	}
	dev := m.opts.Device
	if err := m.loadDenoiser(ctx, rt); err != nil {
		return err
	}
	if _, rel, err := graphFile(m.dir, dirVAEEncoder); err != nil {
		return fmt.Errorf("%s: missing (the %s layout encodes the person and the garment)", rel, m.cfg.Layout.Layout)
	}
	if m.vaeEnc, err = loadGraph(ctx, rt, m.dir, dirVAEEncoder, dev, pickVAEEncoder); err != nil {
		return err
	}
	return m.readTryOnSignature()
}

// readTryOnSignature derives the UNet's tensor conventions for the catvton
// layout: 9 input channels, no timestep_cond, and the encoder_hidden_states
// shape (fed zeros) read from the graph, or from the UNet's config
// (cross_attention_dim) and 77 positions where the graph leaves it dynamic.
func (m *Model) readTryOnSignature() error {
	s := signature{task: TryOn, vaeFactor: m.cfg.VAE.scaleFactor(), scaling: m.cfg.VAE.ScalingFactor}
	sample, ts, hs := m.unet.in[0], m.unet.in[1], m.unet.in[2]
	s.inChannels = m.cfg.UNet.InChannels
	if c := sample.Dims[1]; c > 0 {
		if s.inChannels > 0 && s.inChannels != int(c) {
			return fmt.Errorf("%s/%s says in_channels %d but %s declares input %s", dirUNet, fileConfig, s.inChannels, m.unet.rel, describe(sample))
		}
		s.inChannels = int(c)
	}
	if s.inChannels != inpaintChannels {
		return fmt.Errorf("%s: input %s has %d channels; the %s layout declared in %s needs a 9-channel inpainting UNet",
			m.unet.rel, describe(sample), s.inChannels, m.cfg.Layout.Layout, FileLayout)
	}
	if len(m.unet.in) > 3 {
		return fmt.Errorf("%s: input %s is not supported with the %s layout", m.unet.rel, describe(m.unet.in[3]), m.cfg.Layout.Layout)
	}
	s.seqLen, s.hidden = int(hs.Dims[1]), int(hs.Dims[2])
	if s.seqLen <= 0 {
		s.seqLen = defaultSeqLen
	}
	if s.hidden <= 0 {
		s.hidden = m.cfg.UNet.CrossAttention
	}
	if s.hidden <= 0 {
		return fmt.Errorf("%s: input %s has no static width and %s/%s has no cross_attention_dim", m.unet.rel, describe(hs), dirUNet, fileConfig)
	}
	s.tsType, s.tsScalar = ts.DType, ts.Rank() == 0
	if s.tsScalar && ts.DType == inference.Float16 {
		return fmt.Errorf("%s: input %s is a rank-0 float16 tensor, which onnxruntime_go cannot create; "+
			"install the folder with `fashiond models install`, which writes the adapter %s/%s", m.unet.rel, describe(ts), dirUNet, fileAdapter)
	}
	s.latentParam = m.vaeEnc.out[0].Name == outLatentParams
	l := m.cfg.Layout
	if l.PersonWidth%s.vaeFactor != 0 || l.PersonHeight%s.vaeFactor != 0 {
		return fmt.Errorf("%s: person size %dx%d is not a multiple of the VAE factor %d", FileLayout, l.PersonWidth, l.PersonHeight, s.vaeFactor)
	}
	m.sig = s
	return nil
}

// Layout is the model's fashiond.json declaration, or nil for a plain
// Stable Diffusion export.
func (m *Model) Layout() *Layout {
	if m.cfg.Layout == nil {
		return nil
	}
	l := *m.cfg.Layout
	return &l
}

// TryOnRequest is one try-on generation. Zero numbers take the model's
// fashiond.json defaults.
type TryOnRequest struct {
	// Person is the photo to dress; Mask marks (white) the region of the
	// person that the garment replaces; Garment is the garment's photo.
	Person, Garment, Mask image.Image
	Steps                 int
	// Guidance is the classifier-free guidance scale; above 1 the UNet also
	// runs an unconditional row whose garment half is zeros (CatVTON's
	// rule); 1 or less runs the conditional row alone.
	Guidance   float64
	Method     scheduler.Kind // "" = the folder's scheduler
	Eta        float64
	Seed       uint64
	RandomSeed bool
	// Width and Height are the person's size at which the model runs
	// (multiples of the VAE factor); zero takes fashiond.json's.
	Width, Height int
	Progress      func(done, total int)
}

// normaliseTryOn fills the defaults and checks the request.
func (m *Model) normaliseTryOn(req TryOnRequest) (TryOnRequest, error) {
	l := m.cfg.Layout
	switch {
	case req.Person == nil || req.Garment == nil || req.Mask == nil:
		return req, errors.New("diffusion: try-on needs a person, a garment and a mask")
	case req.Steps == 0:
		req.Steps = l.Steps
	}
	if req.Steps < 1 || req.Steps > MaxSteps {
		return req, fmt.Errorf("diffusion: steps %d must be in 1..%d", req.Steps, MaxSteps)
	}
	if req.Guidance == 0 {
		req.Guidance = l.Guidance
	}
	if math.IsNaN(req.Guidance) || req.Guidance < 0 || req.Guidance > maxGuidance {
		return req, fmt.Errorf("diffusion: guidance %v must be in 0..%d", req.Guidance, maxGuidance)
	}
	if req.Width == 0 && req.Height == 0 {
		req.Width, req.Height = l.PersonWidth, l.PersonHeight
	}
	f := m.sig.vaeFactor
	for _, d := range []struct {
		name string
		v    int
	}{{"width", req.Width}, {"height", req.Height}} {
		if d.v < f || d.v > MaxSide || d.v%f != 0 {
			return req, fmt.Errorf("diffusion: %s %d must be a multiple of %d in %d..%d", d.name, d.v, f, f, MaxSide)
		}
	}
	if req.RandomSeed {
		req.Seed = rand.Uint64()
	}
	return req, nil
}

// tryOnJob is a try-on generation in flight: job holds the person-sized
// request (encoding and decoding), the rest the concatenated latents.
type tryOnJob struct {
	*job
	maskCat   []float32 // [2h][w]: the mask on the person half, zeros below
	cond      []float32 // [4][2h][w]: latents of [masked person ‖ garment]
	uncond    []float32 // [4][2h][w]: latents of [masked person ‖ zeros]
	person    []float32 // person planes in [-1, 1]
	pmask     []float32 // binary mask [H][W], 1 = try-on region
	zeroHid   []float32 // rows × seqLen × hidden zeros
	progress  func(done, total int)
	startTime time.Time
}

// TryOn dresses req.Person in req.Garment inside req.Mask with a catvton
// layout model. Draw order of the job's generator: the VAE encoder's
// sampling noise for the masked person, then for the garment, then the
// initial noise over the concatenated latents, then the scheduler's noise
// per step. The result is the person half decoded, composited into the
// person inside the mask (pixels outside it are the person's own).
func (m *Model) TryOn(ctx context.Context, req TryOnRequest) (*Result, error) {
	start := time.Now()
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	if m.sig.task != TryOn {
		return nil, fmt.Errorf("diffusion: model %s is a %s model; try-on needs a folder whose %s declares the %s layout", m.name, m.sig.task, FileLayout, LayoutCatVTON)
	}
	req, err := m.normaliseTryOn(req)
	if err != nil {
		return nil, err
	}
	f := m.sig.vaeFactor
	j := &tryOnJob{job: &job{
		req:  Request{Guidance: req.Guidance, Steps: req.Steps, Seed: req.Seed, Width: req.Width, Height: req.Height},
		mode: ModeTryOn, h: req.Height / f, w: req.Width / f, rng: newRNG(req.Seed),
	}, progress: req.Progress, startTime: start}
	j.cfg = req.Guidance > 1
	if j.s, err = scheduler.New(m.sched, req.Method, req.Steps, 1); err != nil {
		return nil, fmt.Errorf("diffusion: %w", err)
	}
	if err := j.s.SetEta(req.Eta); err != nil {
		return nil, fmt.Errorf("diffusion: %w", err)
	}
	if err := m.encodeTryOn(ctx, j, req); err != nil {
		return nil, err
	}
	x, err := m.denoiseTryOn(ctx, j)
	if err != nil {
		return nil, err
	}
	return m.finishTryOn(ctx, j, x)
}

// encodeTryOn encodes the masked person and the garment (each at the
// person's size, separately, as CatVTON does) and builds the concatenated
// conditions.
func (m *Model) encodeTryOn(ctx context.Context, j *tryOnJob, req TryOnRequest) error {
	t0 := time.Now()
	defer func() { j.tm.VAEEncode = time.Since(t0) }()
	W, H, h, w := j.req.Width, j.req.Height, j.h, j.w
	j.person = imageToPlanes(req.Person, W, H)
	j.pmask = maskPlane(req.Mask, W, H)
	masked := make([]float32, len(j.person))
	for c := range 3 {
		for p, v := range j.pmask {
			if v < 0.5 {
				masked[c*W*H+p] = j.person[c*W*H+p]
			}
		}
	}
	mlat, err := m.encodeImage(ctx, j.job, masked)
	if err != nil {
		return err
	}
	glat, err := m.encodeImage(ctx, j.job, imageToPlanes(req.Garment, W, H))
	if err != nil {
		return err
	}
	zeros := make([]float32, len(glat))
	j.cond = concatHeight(mlat, glat, latentChannels, h, w)
	j.uncond = concatHeight(mlat, zeros, latentChannels, h, w)
	j.maskCat = concatHeight(downsampleNearest(j.pmask, W, H, w, h), zeros[:h*w], 1, h, w)
	j.zeroHid = make([]float32, j.rows()*m.sig.seqLen*m.sig.hidden)
	return nil
}

// concatHeight joins top [c][h][w] and bottom [c][h][w] into [c][2h][w].
func concatHeight(top, bottom []float32, c, h, w int) []float32 {
	out := make([]float32, 0, 2*c*h*w)
	for k := range c {
		out = append(out, top[k*h*w:(k+1)*h*w]...)
		out = append(out, bottom[k*h*w:(k+1)*h*w]...)
	}
	return out
}

// topHalf is the upper half [c][h][w] of x [c][2h][w].
func topHalf(x []float32, c, h, w int) []float32 {
	out := make([]float32, 0, c*h*w)
	for k := range c {
		out = append(out, x[k*2*h*w:k*2*h*w+h*w]...)
	}
	return out
}

// denoiseTryOn runs the one step loop over the concatenated latents
// (2h×w) from fresh noise, sharing UNet calls with other try-on jobs of
// the same size when batching is on.
func (m *Model) denoiseTryOn(ctx context.Context, j *tryOnJob) ([]float32, error) {
	h2, w := 2*j.h, j.w
	x := scaled(gaussian(j.rng, latentChannels*h2*w), j.s.InitNoiseSigma())
	return m.runSteps(ctx, j.job, x, stepLoop{h: h2, w: w, input: j.stepInput, progress: j.progress})
}

// stepInput is one call's rows: [unconditional, conditional] with guidance
// (the unconditional row's garment half of the masked-image latents is
// zeros), else the conditional row; each row is latents ‖ mask ‖
// masked-image latents along the channels.
func (j *tryOnJob) stepInput(xin []float32, t float64) stepInput {
	conds := [][]float32{j.cond}
	if j.cfg {
		conds = [][]float32{j.uncond, j.cond}
	}
	per := inpaintChannels * 2 * j.h * j.w
	sample := make([]float32, 0, len(conds)*per)
	for _, c := range conds {
		sample = append(sample, xin...)
		sample = append(sample, j.maskCat...)
		sample = append(sample, c...)
	}
	return stepInput{rows: len(conds), h: 2 * j.h, w: j.w, sample: sample, t: t, hidden: j.zeroHid}
}

// finishTryOn decodes the person half and composites it into the person
// inside the mask.
func (m *Model) finishTryOn(ctx context.Context, j *tryOnJob, x []float32) (*Result, error) {
	px, err := m.decode(ctx, j.job, topHalf(x, latentChannels, j.h, j.w))
	if err != nil {
		return nil, err
	}
	W, H := j.req.Width, j.req.Height
	res := &Result{Pixels: px, Seed: j.req.Seed, Mode: ModeTryOn, Method: j.s.Kind()}
	res.Image = planesToImage(composite(px, toUnit(j.person), j.pmask, W, H), W, H)
	j.tm.Total = time.Since(j.startTime)
	res.Timings = j.tm
	return res, nil
}
