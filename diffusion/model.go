package diffusion

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"fashiond/diffusion/clip"
	"fashiond/diffusion/scheduler"
	"fashiond/inference"
)

// Task is what a model does, inferred from its UNet.
type Task string

// The tasks of the engine. A text-to-image model also serves img2img.
const (
	TextToImage Task = "text-to-image"
	Inpainting  Task = "inpainting"
)

// DefaultMaxBatch is the most UNet rows (batch items) one call carries when
// Options.MaxBatch is zero. A job with classifier-free guidance takes two.
const DefaultMaxBatch = 8

// DefaultJoinWindow is Options.JoinWindow's default: a few milliseconds,
// small beside one UNet step of a real model.
const DefaultJoinWindow = 20 * time.Millisecond

// Options tune a loaded model. The zero value is valid: batching off,
// DefaultMaxBatch rows, the runtime's device.
type Options struct {
	// Name is the model's name in messages and metrics (default: the
	// folder's base name).
	Name string
	// MaxBatch is the most UNet rows per call (0 = DefaultMaxBatch).
	MaxBatch int
	// Batching lets concurrent jobs of the same latent size share UNet
	// calls, step by step.
	Batching bool
	// JoinWindow is how long a job's first step waits for other jobs to
	// join when batching a UNet with a rank-0 timestep (only jobs at the
	// same step share a call, so jobs submitted together must start
	// together). Zero means DefaultJoinWindow; negative turns it off.
	JoinWindow time.Duration
	// Device overrides the runtime's device choice ("", "auto", "cpu",
	// "cuda").
	Device string
	// Observer, when set, is told of every UNet call (see BatchObserver).
	Observer BatchObserver
}

// Model is a Stable-Diffusion-family export loaded on ONNX Runtime. It is
// safe for concurrent Generate calls. Close releases it.
type Model struct {
	name  string
	dir   string
	opts  Options
	cfg   folderConfig
	sig   signature
	tok   *clip.Tokenizer
	sched scheduler.Config

	text, unet, vaeEnc, vaeDec *graph

	stats struct{ calls, rows, runNanos atomic.Int64 }

	mu       sync.Mutex
	batchers map[[2]int]*stepBatcher
	closed   bool
}

// signature is how the graphs want their tensors, read from the graphs.
type signature struct {
	task        Task
	inChannels  int
	seqLen      int
	hidden      int
	idsType     inference.DType
	tsType      inference.DType
	tsScalar    bool // rank-0 timestep: one timestep per call
	condDim     int  // timestep_cond width (LCM); 0 when absent
	latentParam bool // the encoder returns mean and log-variance
	vaeFactor   int
	scaling     float64
}

// Load reads and loads the folder dir (the Optimum ONNX layout). Any part
// that does not fit is an error naming the file, the tensor and what was
// expected. The VAE encoder is optional for text-to-image models.
func Load(ctx context.Context, rt *inference.Runtime, dir string, opts Options) (*Model, error) {
	return open(ctx, rt, dir, opts, "model", (*Model).load)
}

// open makes a Model of the folder dir with opts' defaults filled and runs
// load on it; what names the kind of model in errors.
func open(ctx context.Context, rt *inference.Runtime, dir string, opts Options, what string, load func(*Model, context.Context, *inference.Runtime) error) (*Model, error) {
	if rt == nil {
		return nil, fmt.Errorf("diffusion: loading a %s needs a runtime", what)
	}
	if opts.Name == "" {
		opts.Name = filepath.Base(dir)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.JoinWindow == 0 {
		opts.JoinWindow = DefaultJoinWindow
	}
	m := &Model{name: opts.Name, dir: dir, opts: opts, batchers: map[[2]int]*stepBatcher{}}
	if err := load(m, ctx, rt); err != nil {
		m.Close()
		return nil, fmt.Errorf("diffusion: %s %s (%s): %w", what, opts.Name, dir, err)
	}
	return m, nil
}

func (m *Model) load(ctx context.Context, rt *inference.Runtime) error {
	var err error
	if m.cfg, err = readFolderConfig(m.dir); err != nil {
		return err
	}
	if m.tok, err = clip.Load(filepath.Join(m.dir, dirTokenizer)); err != nil {
		return fmt.Errorf("%s: %w", dirTokenizer, err)
	}
	if m.sched, err = readScheduler(m.dir); err != nil {
		return err
	}
	dev := m.opts.Device
	if m.text, err = loadGraph(ctx, rt, m.dir, dirText, dev, pickText); err != nil {
		return err
	}
	if err := m.loadDenoiser(ctx, rt); err != nil {
		return err
	}
	if _, _, err := graphFile(m.dir, dirVAEEncoder); err == nil {
		if m.vaeEnc, err = loadGraph(ctx, rt, m.dir, dirVAEEncoder, dev, pickVAEEncoder); err != nil {
			return err
		}
	}
	return m.readSignature()
}

// readSignature derives the tensor conventions and checks that the graphs
// agree with each other and with the configs.
func (m *Model) readSignature() error {
	s := signature{vaeFactor: m.cfg.VAE.scaleFactor(), scaling: m.cfg.VAE.ScalingFactor}
	ids, hid := m.text.in[0], m.text.out[0]
	s.idsType = ids.DType
	s.seqLen = m.tok.MaxLength()
	if l := ids.Dims[1]; l > 0 && int(l) != s.seqLen {
		return fmt.Errorf("%s: input %s wants %d tokens but the tokenizer makes %d", m.text.rel, describe(ids), l, s.seqLen)
	}
	s.hidden = m.cfg.Text.HiddenSize
	if d := hid.Dims[2]; d > 0 {
		s.hidden = int(d)
	}
	if s.hidden <= 0 {
		return fmt.Errorf("%s: hidden size unknown (output %s and config.json hidden_size)", m.text.rel, describe(hid))
	}
	sample, ts, hs := m.unet.in[0], m.unet.in[1], m.unet.in[2]
	s.inChannels = m.cfg.UNet.InChannels
	if c := sample.Dims[1]; c > 0 {
		if s.inChannels > 0 && s.inChannels != int(c) {
			return fmt.Errorf("%s/%s says in_channels %d but %s declares input %s", dirUNet, fileConfig, s.inChannels, m.unet.rel, describe(sample))
		}
		s.inChannels = int(c)
	}
	switch s.inChannels {
	case latentChannels:
		s.task = TextToImage
	case inpaintChannels:
		s.task = Inpainting
	default:
		return fmt.Errorf("%s: input %s has %d channels, expected 4 (text-to-image) or 9 (inpainting)", m.unet.rel, describe(sample), s.inChannels)
	}
	if d := hs.Dims[2]; d > 0 && int(d) != s.hidden {
		return fmt.Errorf("%s: input %s wants width %d but %s makes %d", m.unet.rel, describe(hs), d, m.text.rel, s.hidden)
	}
	s.tsType, s.tsScalar = ts.DType, ts.Rank() == 0
	if s.tsScalar && ts.DType == inference.Float16 {
		return fmt.Errorf("%s: input %s is a rank-0 float16 tensor, which onnxruntime_go cannot create; "+
			"install the folder with `fashiond models install`, which writes the adapter %s/%s", m.unet.rel, describe(ts), dirUNet, fileAdapter)
	}
	if len(m.unet.in) > 3 {
		tc := m.unet.in[3]
		s.condDim = int(tc.Dims[1])
		if s.condDim <= 0 && m.cfg.UNet.TimeCondProjDim != nil {
			s.condDim = *m.cfg.UNet.TimeCondProjDim
		}
		if s.condDim <= 0 {
			return fmt.Errorf("%s: input %s has no static width and config.json has no time_cond_proj_dim", m.unet.rel, describe(tc))
		}
	}
	if m.vaeEnc != nil {
		s.latentParam = m.vaeEnc.out[0].Name == outLatentParams
	}
	m.sig = s
	return nil
}

// Name is the model's name.
func (m *Model) Name() string { return m.name }

// Task is text-to-image (4-channel UNet) or inpainting (9-channel UNet).
func (m *Model) Task() Task { return m.sig.task }

// DType is the float type of the UNet's tensors ("float32" or "float16").
func (m *Model) DType() string { return m.unet.in[0].DType.String() }

// Device is where the UNet runs ("cpu" or "cuda").
func (m *Model) Device() string { return m.unet.sess.Device() }

// DefaultSize is the folder's native image size (UNet sample_size × VAE
// factor; 512 for SD-1.5).
func (m *Model) DefaultSize() int { return m.cfg.UNet.SampleSize * m.sig.vaeFactor }

// Stats are the UNet calls made so far, the rows they carried and the time
// spent inside ONNX Runtime for them.
type Stats struct {
	Calls, Rows int64
	UNet        time.Duration
}

// Stats reads the counters.
func (m *Model) Stats() Stats {
	return Stats{Calls: m.stats.calls.Load(), Rows: m.stats.rows.Load(), UNet: time.Duration(m.stats.runNanos.Load())}
}

// Close releases every session. Idempotent and nil-safe.
func (m *Model) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return errors.Join(m.text.Close(), m.unet.Close(), m.vaeEnc.Close(), m.vaeDec.Close())
}

// readScheduler reads and checks the folder's scheduler/scheduler_config.json.
func readScheduler(dir string) (scheduler.Config, error) {
	name := filepath.Join(dirScheduler, "scheduler_config.json")
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return scheduler.Config{}, fmt.Errorf("%s: %w", name, err)
	}
	cfg, err := scheduler.ParseConfig(raw)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := scheduler.KindOf(cfg.ClassName); err != nil {
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// loadDenoiser loads the UNet and the VAE decoder, which every layout has.
func (m *Model) loadDenoiser(ctx context.Context, rt *inference.Runtime) error {
	var err error
	if m.unet, err = loadGraph(ctx, rt, m.dir, dirUNet, m.opts.Device, pickUNet); err != nil {
		return err
	}
	m.vaeDec, err = loadGraph(ctx, rt, m.dir, dirVAEDecoder, m.opts.Device, pickVAEDecoder)
	return err
}
