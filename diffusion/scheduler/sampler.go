package scheduler

import (
	"fmt"
	"math"
)

// method is one class's stepping rule over the calls of a Sampler.
type method interface {
	// inputScale is the factor ScaleModelInput applies for call i.
	inputScale(i int) float64
	// noiseLevel gives x = signal*x0 + noise*eps at the level of call i.
	noiseLevel(i int) (signal, noise float64)
	// step consumes the model output of call i.
	step(mo, x []float64, i int, draw func() ([]float64, error)) ([]float64, error)
}

// Sampler is one job's scheduler state (it is not safe for concurrent use).
// Steps must be taken in call order, once each.
type Sampler struct {
	kind           Kind
	p              params
	ac             []float64
	timesteps      []float64
	initNoiseSigma float64
	m              method
	next           int
	eta            float64
}

// New makes the sampler for steps inference steps. strength in (0, 1] is the
// img2img strength: as diffusers' StableDiffusionImg2ImgPipeline.get_timesteps,
// the first steps - min(int(steps*strength), steps) steps are skipped (for
// PNDM, see doc.go). kind "" means the class named by cfg.ClassName; another
// kind keeps the config's keys and takes its own class defaults for keys the
// config does not give.
func New(cfg Config, kind Kind, steps int, strength float64) (*Sampler, error) {
	if kind == "" {
		k, err := KindOf(cfg.ClassName)
		if err != nil {
			return nil, err
		}
		kind = k
	} else if _, err := ParseKind(string(kind)); err != nil || kind.ClassName() == "" {
		return nil, fmt.Errorf("scheduler: unknown method %q (supported: %s)", kind, kindList())
	}
	p, err := resolve(cfg, kind)
	if err != nil {
		return nil, err
	}
	if steps < 1 || steps > p.numTrainTimesteps {
		return nil, fmt.Errorf("scheduler: steps %d is out of range [1, %d]", steps, p.numTrainTimesteps)
	}
	kept, err := keptSteps(steps, strength)
	if err != nil {
		return nil, err
	}
	s := &Sampler{kind: kind, p: p, ac: p.alphasCumprod(), initNoiseSigma: 1}
	if err := s.build(steps, steps-kept); err != nil {
		return nil, err
	}
	return s, nil
}

// keptSteps is init_timestep of diffusers' get_timesteps.
func keptSteps(steps int, strength float64) (int, error) {
	if !(strength > 0 && strength <= 1) {
		return 0, fmt.Errorf("scheduler: strength %v is out of range (0, 1]", strength)
	}
	kept := min(int(float64(steps)*strength), steps)
	if kept < 1 {
		return 0, fmt.Errorf("scheduler: strength %v with %d steps leaves no step (int(steps*strength) = 0); raise strength to at least %v",
			strength, steps, 1/float64(steps))
	}
	return kept, nil
}

// build sets the call list and stepping rule of s.kind.
func (s *Sampler) build(steps, skip int) error {
	switch s.kind {
	case Euler, EulerAncestral:
		return s.buildEuler(steps, skip)
	case DDIM:
		return s.buildDDIM(steps, skip)
	case PNDM:
		return s.buildPNDM(steps, skip)
	case DPMPP2M:
		return s.buildDPM(steps, skip)
	default:
		return s.buildLCM(steps, skip)
	}
}

// Kind is the method this sampler runs.
func (s *Sampler) Kind() Kind { return s.kind }

// Timesteps is the UNet timestep of each model call, in order; its length is
// the number of calls (PNDM repeats a timestep, as diffusers does).
func (s *Sampler) Timesteps() []float64 { return append([]float64(nil), s.timesteps...) }

// InitNoiseSigma is the factor to multiply unit Gaussian noise by to make the
// starting latents of text-to-image (diffusers' init_noise_sigma).
func (s *Sampler) InitNoiseSigma() float64 { return s.initNoiseSigma }

// AlphasCumprod is a copy of the train-time cumulative product of 1-beta.
func (s *Sampler) AlphasCumprod() []float64 { return append([]float64(nil), s.ac...) }

// SetEta sets DDIM's eta in [0, 1] (0, the default, is deterministic DDIM;
// 1 is DDPM-like; above 1 diffusers' formula takes the square root of a
// negative number). Other methods ignore it. Set it before the first Step.
func (s *Sampler) SetEta(eta float64) error {
	if !(eta >= 0 && eta <= 1) {
		return fmt.Errorf("scheduler: eta %v is out of range [0, 1]", eta)
	}
	if s.next != 0 {
		return fmt.Errorf("scheduler: eta must be set before the first step")
	}
	s.eta = eta
	return nil
}

// ScaleModelInput returns x scaled for model call i (a new slice): x /
// sqrt(sigma^2+1) for Euler and Euler-ancestral, a copy of x for the others.
// It panics if i is not a call index.
func (s *Sampler) ScaleModelInput(x []float32, i int) []float32 {
	s.checkCall(i)
	k := s.m.inputScale(i)
	out := make([]float32, len(x))
	for j, v := range x {
		out[j] = float32(float64(v) * k)
	}
	return out
}

// AddNoise noises clean latents x0 to the level of call i: the img2img start
// uses i = 0. It panics if i is not a call index or the lengths differ.
func (s *Sampler) AddNoise(x0, noise []float32, i int) []float32 {
	s.checkCall(i)
	if len(x0) != len(noise) {
		panic(fmt.Sprintf("scheduler: AddNoise: %d latents but %d noise values", len(x0), len(noise)))
	}
	a, b := s.m.noiseLevel(i)
	out := make([]float32, len(x0))
	for j := range x0 {
		out[j] = float32(a*float64(x0[j]) + b*float64(noise[j]))
	}
	return out
}

// AddNoiseAfter is the level the sample has after call i: AddNoise at call
// i+1, or a copy of x0 after the last call. This is what the 4-channel
// inpainting loop blends in outside the mask after each step.
func (s *Sampler) AddNoiseAfter(x0, noise []float32, i int) []float32 {
	s.checkCall(i)
	if i+1 < len(s.timesteps) {
		return s.AddNoise(x0, noise, i+1)
	}
	return append([]float32(nil), x0...)
}

// Step consumes the model output for call i (the calls must come in order)
// and returns the next sample as a new slice. noise(n) must return n standard
// Gaussian values; it is called only by methods that inject noise, at most
// once per Step, in this order: euler-a on every step (the last one too, with
// weight 0, as diffusers draws it); ddim on every step when eta > 0; lcm on
// every step but the last. It may be nil for the other methods.
func (s *Sampler) Step(modelOutput, x []float32, i int, noise func(n int) []float32) ([]float32, error) {
	if i != s.next || i >= len(s.timesteps) {
		return nil, fmt.Errorf("scheduler: step %d out of order (next is %d of %d)", i, s.next, len(s.timesteps))
	}
	if len(modelOutput) != len(x) || len(x) == 0 {
		return nil, fmt.Errorf("scheduler: model output has %d values, sample %d", len(modelOutput), len(x))
	}
	draw := func() ([]float64, error) {
		if noise == nil {
			return nil, fmt.Errorf("scheduler: %s needs a noise source", s.kind)
		}
		z := noise(len(x))
		if len(z) != len(x) {
			return nil, fmt.Errorf("scheduler: noise source gave %d values, want %d", len(z), len(x))
		}
		return widen(z), nil
	}
	out, err := s.m.step(widen(modelOutput), widen(x), i, draw)
	if err != nil {
		return nil, err
	}
	s.next++
	return narrow(out), nil
}

func (s *Sampler) checkCall(i int) {
	if i < 0 || i >= len(s.timesteps) {
		panic(fmt.Sprintf("scheduler: call %d out of range [0, %d)", i, len(s.timesteps)))
	}
}

// predictX0 turns a model output into the predicted clean sample for a
// variance-preserving sample x at cumulative alpha ab.
func predictX0(prediction string, mo, x, ab float64) float64 {
	if prediction == "v_prediction" {
		return math.Sqrt(ab)*x - math.Sqrt(1-ab)*mo
	}
	return (x - math.Sqrt(1-ab)*mo) / math.Sqrt(ab)
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func narrow(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func clamp(v, lim float64) float64 { return math.Max(-lim, math.Min(lim, v)) }
