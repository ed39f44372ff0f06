package diffusion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"fashiond/diffusion/scheduler"
	"fashiond/inference"
)

// logvarMin and logvarMax clamp the VAE encoder's log-variance as
// diffusers' DiagonalGaussianDistribution does.
const (
	logvarMin = -30
	logvarMax = 20
)

// job is one generation in flight.
type job struct {
	req     Request
	mode    Mode
	h, w    int // latent size
	rng     *rand.Rand
	s       *scheduler.Sampler
	cfg     bool      // classifier-free guidance: rows = [uncond, cond]
	hidden  []float32 // rows × seqLen × hidden
	tcond   []float32 // rows × condDim (LCM), else nil
	img     []float32 // input image [3][H][W] in [-1, 1]
	mask    []float32 // binary mask [H][W], 1 = repaint
	init    []float32 // clean image latents (scaled)
	maskLat []float32 // mask at latent size [h][w]
	masked  []float32 // masked-image latents (9-channel UNets)
	noise   []float32 // the initial noise
	tm      Timings
}

// rows is the UNet batch rows one step of this job takes.
func (j *job) rows() int {
	if j.cfg {
		return 2
	}
	return 1
}

// Generate runs one request. A cancelled ctx stops it at the next step.
func (m *Model) Generate(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	req, mode, err := m.normalise(req)
	if err != nil {
		return nil, err
	}
	j := &job{req: req, mode: mode, h: req.Height / m.sig.vaeFactor, w: req.Width / m.sig.vaeFactor, rng: newRNG(req.Seed)}
	j.cfg = req.Guidance > 1 && m.sig.condDim == 0
	if j.s, err = scheduler.New(m.sched, req.Method, req.Steps, req.Strength); err != nil {
		return nil, fmt.Errorf("diffusion: %w", err)
	}
	if err := j.s.SetEta(req.Eta); err != nil {
		return nil, fmt.Errorf("diffusion: %w", err)
	}
	if err := m.encodeText(ctx, j); err != nil {
		return nil, err
	}
	if err := m.prepareLatents(ctx, j); err != nil {
		return nil, err
	}
	x, err := m.denoise(ctx, j)
	if err != nil {
		return nil, err
	}
	px, err := m.decode(ctx, j, x)
	if err != nil {
		return nil, err
	}
	res := &Result{Pixels: px, Seed: req.Seed, Mode: mode, Method: j.s.Kind()}
	out := px
	if mode == ModeInpaint {
		out = composite(px, toUnit(j.img), j.mask, req.Width, req.Height)
	}
	res.Image = planesToImage(out, req.Width, req.Height)
	j.tm.Total = time.Since(start)
	res.Timings = j.tm
	return res, nil
}

// encodeText tokenises the prompts and runs the text encoder once for the
// rows of the job: [negative, prompt] with guidance, else [prompt].
func (m *Model) encodeText(ctx context.Context, j *job) error {
	t0 := time.Now()
	prompts := []string{j.req.Prompt}
	if j.cfg {
		prompts = []string{j.req.NegativePrompt, j.req.Prompt}
	}
	L := m.sig.seqLen
	ids := make([]int64, 0, len(prompts)*L)
	for _, p := range prompts {
		ids = append(ids, m.tok.EncodePadded(p, L)...)
	}
	t1 := time.Now()
	j.tm.Tokenize = t1.Sub(t0)
	B := int64(len(prompts))
	out, err := m.text.run(ctx, []inference.Value{{DType: m.sig.idsType, Shape: []int64{B, int64(L)}, I64: ids}},
		[][]int64{{B, int64(L), int64(m.sig.hidden)}})
	if err != nil {
		return fmt.Errorf("diffusion: %s: %w", m.text.rel, err)
	}
	j.hidden = out[0].F32
	j.tm.TextEncoder = time.Since(t1)
	if m.sig.condDim > 0 {
		emb := scheduler.GuidanceEmbedding(j.req.Guidance, m.sig.condDim)
		for range j.rows() {
			j.tcond = append(j.tcond, emb...)
		}
	}
	return nil
}

// prepareLatents makes the starting latents. Draw order of the job's
// generator: the VAE encoder's sampling noise (img2img and inpainting),
// then the initial latent noise, then the scheduler's noise per step.
func (m *Model) prepareLatents(ctx context.Context, j *job) error {
	n := latentChannels * j.h * j.w
	if j.mode != ModeText {
		if err := m.encodeInputs(ctx, j); err != nil {
			return err
		}
	}
	j.noise = gaussian(j.rng, n)
	return nil
}

// encodeInputs reads the image (and mask) and encodes the latents the
// mode needs.
func (m *Model) encodeInputs(ctx context.Context, j *job) error {
	t0 := time.Now()
	defer func() { j.tm.VAEEncode += time.Since(t0) }()
	W, H := j.req.Width, j.req.Height
	j.img = imageToPlanes(j.req.Image, W, H)
	var err error
	if j.mode == ModeInpaint {
		j.mask = maskPlane(j.req.Mask, W, H)
		j.maskLat = downsampleNearest(j.mask, W, H, j.w, j.h)
		if m.sig.task == Inpainting {
			masked := make([]float32, len(j.img))
			for c := range 3 {
				for p, v := range j.mask {
					if v < 0.5 {
						masked[c*W*H+p] = j.img[c*W*H+p]
					}
				}
			}
			if j.masked, err = m.encodeImage(ctx, j, masked); err != nil {
				return err
			}
		}
	}
	j.init, err = m.encodeImage(ctx, j, j.img)
	return err
}

// encodeImage runs the VAE encoder on planes in [-1, 1] and returns scaled
// latents, sampling the latent distribution when the encoder gives one.
func (m *Model) encodeImage(ctx context.Context, j *job, planes []float32) ([]float32, error) {
	W, H := int64(j.req.Width), int64(j.req.Height)
	oc := int64(latentChannels)
	if m.sig.latentParam {
		oc *= 2
	}
	out, err := m.vaeEnc.run(ctx, []inference.Value{{DType: m.vaeEnc.in[0].DType, Shape: []int64{1, 3, H, W}, F32: planes}},
		[][]int64{{1, oc, int64(j.h), int64(j.w)}})
	if err != nil {
		return nil, fmt.Errorf("diffusion: %s: %w", m.vaeEnc.rel, err)
	}
	n := latentChannels * j.h * j.w
	data := out[0].F32
	z := make([]float32, n)
	if !m.sig.latentParam {
		for i := range z {
			z[i] = float32(float64(data[i]) * m.sig.scaling)
		}
		return z, nil
	}
	eps := gaussian(j.rng, n)
	for i := range z {
		lv := math.Max(logvarMin, math.Min(logvarMax, float64(data[n+i])))
		z[i] = float32((float64(data[i]) + math.Exp(0.5*lv)*float64(eps[i])) * m.sig.scaling)
	}
	return z, nil
}

// denoise runs the scheduler's calls through the UNet (batched with other
// jobs when batching is on) and returns the final latents; a 4-channel
// UNet inpainting keeps the re-noised original outside the mask after
// every step.
func (m *Model) denoise(ctx context.Context, j *job) ([]float32, error) {
	var x []float32
	// As diffusers: inpainting at strength 1 starts from pure noise
	// (is_strength_max); img2img always noises the image to the first
	// call's level, strength 1 included (a trace of the image remains).
	if j.mode == ModeText || (j.mode == ModeInpaint && j.req.Strength >= 1) {
		x = scaled(j.noise, j.s.InitNoiseSigma())
	} else {
		x = j.s.AddNoise(j.init, j.noise, 0)
	}
	loop := stepLoop{
		h: j.h, w: j.w,
		input:    func(xin []float32, t float64) stepInput { return m.stepInput(j, xin, t) },
		progress: j.req.Progress,
	}
	if j.mode == ModeInpaint && m.sig.task == TextToImage {
		loop.blend = func(x []float32, i int) []float32 {
			return blendKnown(x, j.s.AddNoiseAfter(j.init, j.noise, i), j.maskLat)
		}
	}
	return m.runSteps(ctx, j, x, loop)
}

// stepLoop is what one denoising schedule brings to the one step loop
// (runSteps): the latent size of its UNet sample (the batcher's key), the
// rows of one UNet call, what follows each scheduler step, and who hears
// of progress.
type stepLoop struct {
	// h, w is the latent size of one row's sample.
	h, w int
	// input builds the UNet rows of one call from the scaled latents xin
	// at timestep t.
	input func(xin []float32, t float64) stepInput
	// blend, when set, rewrites the latents after scheduler step i
	// (inpainting keeps the known region).
	blend func(x []float32, i int) []float32
	// progress, when set, is called before each UNet call with the steps
	// done and the total, and once more at the end.
	progress func(done, total int)
}

// runSteps runs j's scheduler from the latents x: each step's rows go
// through the UNet (batched with other jobs of the same latent size when
// batching is on), are combined by guidance and stepped; it returns the
// final latents. A cancelled ctx stops it before the next step.
func (m *Model) runSteps(ctx context.Context, j *job, x []float32, l stepLoop) ([]float32, error) {
	t0 := time.Now()
	defer func() { j.tm.Denoise = time.Since(t0) }()
	progress := l.progress
	if progress == nil {
		progress = func(int, int) {}
	}
	steps := j.s.Timesteps()
	b := m.batcherFor(l.h, l.w)
	b.join()
	defer b.leave()
	noise := func(n int) []float32 { return gaussian(j.rng, n) }
	for i, t := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		progress(i, len(steps))
		in := l.input(j.s.ScaleModelInput(x, i), t)
		call := &stepCall{batchCall: newBatchCall(in.rows), in: in, first: i == 0}
		if err := m.submitStep(ctx, b, call); err != nil {
			return nil, err
		}
		j.tm.UNet += call.ran
		j.tm.JoinWait += call.joinWait
		j.tm.Calls++
		var err error
		if x, err = j.s.Step(m.guide(j, call.out), x, i, noise); err != nil {
			return nil, fmt.Errorf("diffusion: %w", err)
		}
		if l.blend != nil {
			x = l.blend(x, i)
		}
	}
	progress(len(steps), len(steps))
	return x, nil
}

// stepInput builds the UNet rows of one call: the scaled latents (with the
// mask and masked-image latents for 9-channel UNets), repeated per row.
func (m *Model) stepInput(j *job, xin []float32, t float64) stepInput {
	per := m.sig.inChannels * j.h * j.w
	sample := make([]float32, 0, j.rows()*per)
	for range j.rows() {
		sample = append(sample, xin...)
		if m.sig.task == Inpainting {
			sample = append(sample, j.maskLat...)
			sample = append(sample, j.masked...)
		}
	}
	return stepInput{rows: j.rows(), h: j.h, w: j.w, sample: sample, t: t, hidden: j.hidden, tcond: j.tcond}
}

// guide combines the rows' outputs: uncond + w·(cond − uncond) with
// guidance, else the single row.
func (m *Model) guide(j *job, out []float32) []float32 {
	if !j.cfg {
		return out
	}
	n := len(out) / 2
	w := float32(j.req.Guidance)
	res := make([]float32, n)
	for i := range res {
		u, c := out[i], out[n+i]
		res[i] = u + w*(c-u)
	}
	return res
}

// blendKnown keeps the denoised latents inside the mask and the re-noised
// original latents outside it (4-channel UNets inpainting).
func blendKnown(x, known, maskLat []float32) []float32 {
	hw := len(maskLat)
	for i := range x {
		m := maskLat[i%hw]
		x[i] = m*x[i] + (1-m)*known[i]
	}
	return x
}

// decode runs the VAE decoder on x / scaling_factor and maps (v/2 + 0.5)
// into [0, 1].
func (m *Model) decode(ctx context.Context, j *job, x []float32) ([]float32, error) {
	t0 := time.Now()
	defer func() { j.tm.VAEDecode = time.Since(t0) }()
	z := scaled(x, 1/m.sig.scaling)
	W, H := int64(j.req.Width), int64(j.req.Height)
	out, err := m.vaeDec.run(ctx, []inference.Value{{DType: m.vaeDec.in[0].DType, Shape: []int64{1, latentChannels, int64(j.h), int64(j.w)}, F32: z}},
		[][]int64{{1, 3, H, W}})
	if err != nil {
		return nil, fmt.Errorf("diffusion: %s: %w", m.vaeDec.rel, err)
	}
	if got := out[0].Shape; len(got) != 4 || got[2] != H || got[3] != W {
		return nil, fmt.Errorf("diffusion: %s returned shape %v, want [1 3 %d %d]", m.vaeDec.rel, got, H, W)
	}
	px := out[0].F32
	for i, v := range px {
		px[i] = float32(math.Max(0, math.Min(1, float64(v)/2+0.5)))
	}
	return px, nil
}

func scaled(v []float32, k float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * k)
	}
	return out
}

// checkOpen is an error once the model is closed.
func (m *Model) checkOpen() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("diffusion: model %s is closed", m.name)
	}
	return nil
}
