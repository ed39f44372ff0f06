// Package imagetovideo is the image-to-video reference pipeline: the still is
// split into person and background layers with depth (pipelines/capability/scene), a
// camera move chosen from the prompt is rendered as 2.5D parallax of those
// layers, the person gets subtle pose-anchored motion (breathing, sway),
// the frame is filled to the requested aspect without bars, and frames are
// streamed to ffmpeg (H.264 yuv420p, faststart) with a synthesised ambient
// audio bed when asked (chosen from the prompt's words, else the picture's
// colours). Sampled frames are self-checked (person count stable, people's
// area continuous) before the clip is returned. Output is 720x1280 (9:16)
// or 1280x720 (16:9).
package imagetovideo

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"fashiond/ffmpeg"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/scene"
	"fashiond/spec"
)

// Options configures the pipeline.
type Options struct {
	// FFmpeg is the ffmpeg executable; "" means "ffmpeg" on PATH.
	FFmpeg string
	// FPS is 24 (default) or 30.
	FPS int
	// TempDir holds the MP4 while it is written; "" means os.TempDir().
	TempDir string
	// Log receives per-job timings; nil means slog.Default().
	Log *slog.Logger
	// Inpainter, when set, paints the background beyond the photo's
	// edges (contain framing) instead of the mirrored, blurred extension.
	Inpainter generative.Inpainter
}

// Pipeline implements pipelines.Pipeline for image-to-video.
type Pipeline struct {
	p    perception.Perception
	opts Options
}

// New returns the image-to-video pipeline.
func New(p perception.Perception, opts Options) *Pipeline {
	if opts.FFmpeg == "" {
		opts.FFmpeg = "ffmpeg"
	}
	if opts.FPS == 0 {
		opts.FPS = 24
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Pipeline{p: p, opts: opts}
}

// Name implements pipelines.Pipeline.
func (*Pipeline) Name() string { return spec.ModelImageToVideo }

// GenerativeModels implements pipelines.GenerativeUser.
func (p *Pipeline) GenerativeModels() []string {
	if p.opts.Inpainter == nil {
		return nil
	}
	return []string{p.opts.Inpainter.Model()}
}

// Inputs are the normalised inputs of image-to-video.
type Inputs = spec.ImageToVideoInputs

// Spec is a fully resolved video request.
type Spec struct {
	Prompt   string
	Duration time.Duration
	Width    int
	Height   int
	FPS      int
	Audio    bool
}

// Stats are the timings of one generation.
type Stats struct {
	Frames int
	// Layers is the time spent on perception and layer preparation.
	Layers time.Duration
	// Synthesis is the summed time spent rendering frames.
	Synthesis time.Duration
	// EncodeWait is the time spent blocked on ffmpeg (pipe writes and the
	// final flush) beyond synthesis.
	EncodeWait time.Duration
	Total      time.Duration
	Move       Move
	Bed        Bed // "" when no audio
	// BedWhy says why the bed was chosen (the prompt's word or the
	// picture's cues).
	BedWhy string
	// Cues are the background plate's colour cues.
	Cues    Cues
	Framing string
	// Generative says how the background extension was generated; nil
	// when it was classical (or not needed).
	Generative *generative.Info
	// Checks are the self-checks measured on sampled frames; CheckTime is
	// the time they took.
	Checks    []pipelines.Check
	CheckTime time.Duration
}

// SizeFor returns the output size for an aspect ratio.
func SizeFor(aspect string) (w, h int, err error) {
	switch aspect {
	case "9:16":
		return 720, 1280, nil
	case "16:9":
		return 1280, 720, nil
	}
	return 0, 0, fmt.Errorf("aspectRatio %q is not supported (use 16:9 or 9:16)", aspect)
}

// resolve turns normalised inputs (checked by the API, defaults applied) into a video request; only the output size is looked up.
func (p *Pipeline) resolve(in Inputs) (Spec, error) {
	w, h, err := SizeFor(in.AspectRatio)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Prompt: in.Prompt, Duration: time.Duration(in.Duration) * time.Second, Width: w, Height: h, FPS: p.opts.FPS, Audio: in.GenerateAudio}, nil
}

// Run implements pipelines.Pipeline.
func (p *Pipeline) Run(ctx context.Context, req *pipelines.Request) (*pipelines.Result, error) {
	typed, err := pipelines.InputsOf[Inputs](req)
	if err != nil {
		return nil, err
	}
	in := *typed
	spec, err := p.resolve(in)
	if err != nil {
		return nil, pipelines.Failf("inputs: %v", err)
	}
	progress := req.Progress
	progress("load", 0.01, "")
	img, err := req.Images.Load(ctx, "inputs.imageUrl", in.ImageURL)
	if err != nil {
		return nil, err
	}
	img, flattened := raster.OnWhite(img)
	mp4, st, err := p.Generate(ctx, img, spec, progress)
	if err != nil {
		return nil, err
	}
	out := pipelines.Output{
		Video:  mp4,
		Format: "mp4",
		Path:   "reference",
		Method: method(st),
		Notes: []string{
			fmt.Sprintf("%dx%d H.264 at %d fps, %s exactly", spec.Width, spec.Height, spec.FPS, spec.Duration),
			"camera move rendered as 2.5D depth parallax of two layers (person, background plate with the person inpainted); nothing outside the photo is generated beyond mirrored, blurred background extension",
			"body motion is a small pose-anchored deformation (breathing, sway, head drift), not a generated performance: no walking, turning or garment physics",
		},
	}
	if flattened {
		out.Notes = append(out.Notes, "the photo's transparent background is shown white (a video has no transparency)")
	}
	if g := st.Generative; g != nil {
		out.Path = "generative"
		out.Method += ",background-extension=" + g.Model
		out.Notes[1] = "camera move rendered as 2.5D depth parallax of two layers (person, background plate with the person inpainted); the photo's pixels are kept, and the background beyond its edges is generated"
		out.Notes = append(out.Notes, g.Note("the background beyond the photo's edges was"))
	}
	if st.Bed != "" {
		out.Notes = append(out.Notes, fmt.Sprintf("audio is a synthesised ambient bed (%s), not audio generated from the image: %s", st.Bed, st.BedWhy))
	}
	out.Checks = st.Checks
	return &pipelines.Result{Outputs: []pipelines.Output{out}}, nil
}

func method(st *Stats) string {
	m := fmt.Sprintf("2.5d-depth-parallax(%s)+pose-anchored-motion,framing=%s", st.Move, st.Framing)
	if st.Bed != "" {
		m += ",audio=" + string(st.Bed)
	} else {
		m += ",audio=none"
	}
	return m
}

// maxWorkPixels bounds the working resolution of the still.
const maxWorkPixels = 1_600_000

// Generate renders the clip for img and returns the MP4 bytes and timings;
// progress is never nil (pipelinetest.NoProgress when nothing watches).
func (p *Pipeline) Generate(ctx context.Context, img image.Image, spec Spec, progress pipelines.ProgressFunc) ([]byte, *Stats, error) {
	start := time.Now()
	st := &Stats{Move: ChooseMove(spec.Prompt)}
	r, err := p.layout(ctx, img, spec, st, progress)
	if err != nil {
		return nil, nil, err
	}
	st.Framing = r.Framing
	st.Layers = time.Since(start)
	dir, err := os.MkdirTemp(p.opts.TempDir, "fashiond-video-*")
	if err != nil {
		return nil, nil, fmt.Errorf("video: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.mp4")
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc, err := ffmpeg.NewEncoder(ectx, p.encoderOptions(spec, st, out))
	if err != nil {
		return nil, nil, fmt.Errorf("video: %w", err)
	}
	defer enc.Close()
	n := enc.FramesNeeded()
	st.Frames = n
	samples := newFrameSamples(n)
	synth, werr := renderFrames(ectx, cancel, enc, r, spec, n, samples, progress)
	if werr == nil && ctx.Err() != nil {
		werr = ctx.Err()
	}
	progress("encode", 0.96, "finishing MP4")
	cerr := enc.Close()
	if werr != nil {
		return nil, nil, fmt.Errorf("video: %w", werr)
	}
	if cerr != nil {
		return nil, nil, fmt.Errorf("video: %w", cerr)
	}
	progress("check", 0.97, "")
	t0 := time.Now()
	if st.Checks, err = p.checkFrames(ctx, samples.frames); err != nil {
		return nil, nil, err
	}
	st.CheckTime = time.Since(t0)
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, nil, fmt.Errorf("video: %w", err)
	}
	st.Total = time.Since(start)
	st.Synthesis = synth
	st.EncodeWait = max(0, st.Total-st.Layers-synth-st.CheckTime)
	p.opts.Log.Info("image-to-video rendered", "frames", n, "move", st.Move, "bed", st.Bed,
		"layers", st.Layers, "synthesis", st.Synthesis, "encode_wait", st.EncodeWait, "checks", st.CheckTime, "total", st.Total)
	progress("done", 1, "")
	return data, st, nil
}

// Encoding and rendering tuning.
const (
	// minAnimateSide: a smaller image is too small to animate.
	minAnimateSide = 32
	// videoCRF and videoPreset: the H.264 quality and speed.
	videoCRF    = 20
	videoPreset = "veryfast"
	// audioRate: the ambient bed's sample rate (Hz, stereo), faded in and
	// out over audioFadeIn and audioFadeOut.
	audioRate    = 48000
	audioFadeIn  = 600 * time.Millisecond
	audioFadeOut = 900 * time.Millisecond
	// frameBuffers and readyFrames: the renderer works ahead of the
	// encoder with this many frame buffers, this many ready at once.
	frameBuffers = 3
	readyFrames  = 2
	// progressEvery: frame progress is reported every this many frames.
	progressEvery = 6
)

// layout checks the still's size, splits it (at most maxWorkPixels) into
// layers and lays them out for the clip's frame size, extending the
// background with the inpainter when there is one.
func (p *Pipeline) layout(ctx context.Context, img image.Image, spec Spec, st *Stats, progress pipelines.ProgressFunc) (*renderer, error) {
	b := img.Bounds()
	if b.Dx() < minAnimateSide || b.Dy() < minAnimateSide {
		return nil, pipelines.Failf("inputs.imageUrl: image %dx%d is too small to animate (need at least 32x32)", b.Dx(), b.Dy())
	}
	work := raster.RGBA(img)
	if px := b.Dx() * b.Dy(); px > maxWorkPixels {
		k := math.Sqrt(float64(maxWorkPixels) / float64(px))
		work = raster.Resize(img, max(1, int(float64(b.Dx())*k)), max(1, int(float64(b.Dy())*k)))
	}
	progress("layers", 0.03, "person, background and depth")
	sc, err := scene.Layers(ctx, p.p, work, scene.Options{WithDepth: true})
	if err != nil {
		return nil, err
	}
	st.Cues = PictureCues(sc.Background)
	extend := extender(classicalExtend)
	if p.opts.Inpainter != nil {
		step := func(done, total int) {
			progress("background", 0.04+0.05*float64(done)/float64(max(1, total)), fmt.Sprintf("step %d/%d", done, total))
		}
		extend = generativeExtend(ctx, p.opts.Inpainter, pipelines.Seed(spec.Prompt), step, &st.Generative)
	}
	return newRenderer(sc, st.Move, spec.Width, spec.Height, extend)
}

// encoderOptions are the encoder's settings for the clip, with the
// ambient bed chosen from the prompt or the picture (st.Bed) when it has
// audio.
func (p *Pipeline) encoderOptions(spec Spec, st *Stats, out string) ffmpeg.Options {
	eo := ffmpeg.Options{Binary: p.opts.FFmpeg, Width: spec.Width, Height: spec.Height, FPS: spec.FPS,
		Duration: spec.Duration, CRF: videoCRF, Preset: videoPreset, Out: out}
	if spec.Audio {
		st.Bed, st.BedWhy = ChooseBedFor(spec.Prompt, st.Cues)
		pcm := SynthesizeBed(st.Bed, spec.Duration.Seconds()+0.1, audioRate, pipelines.Seed(spec.Prompt))
		eo.Audio = &ffmpeg.AudioSpec{SampleRate: audioRate, Channels: 2, PCM: bytes.NewReader(pcm),
			FadeIn: audioFadeIn, FadeOut: audioFadeOut}
	}
	return eo
}

// renderFrames renders the n frames ahead of the encoder (a small ring of
// frame buffers) and writes them to it, reporting progress; a write error
// cancels the rendering. It returns the time spent rendering and the
// first write error.
func renderFrames(ectx context.Context, cancel context.CancelFunc, enc *ffmpeg.Encoder, r *renderer, spec Spec, n int, samples *frameSamples, progress pipelines.ProgressFunc) (time.Duration, error) {
	type frame struct {
		img *image.RGBA
		i   int
	}
	free := make(chan *image.RGBA, frameBuffers)
	for i := 0; i < frameBuffers; i++ {
		free <- image.NewRGBA(image.Rect(0, 0, spec.Width, spec.Height))
	}
	ready := make(chan frame, readyFrames)
	var synth time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ready)
		for i := 0; i < n; i++ {
			var buf *image.RGBA
			select {
			case buf = <-free:
			case <-ectx.Done():
				return
			}
			t0 := time.Now()
			t := float64(i) / float64(max(1, n-1))
			r.render(buf, t, float64(i)/float64(spec.FPS))
			synth += time.Since(t0)
			select {
			case ready <- frame{buf, i}:
			case <-ectx.Done():
				return
			}
		}
	}()
	var werr error
	written := 0
	for f := range ready {
		samples.keep(f.i, f.img)
		if werr == nil {
			werr = enc.WriteFrame(f.img)
			if werr != nil {
				cancel()
			}
		}
		free <- f.img
		written++
		if written%progressEvery == 0 || written == n {
			progress("frames", 0.1+0.85*float64(written)/float64(n), fmt.Sprintf("frame %d/%d", written, n))
		}
	}
	wg.Wait()
	return synth, werr
}
