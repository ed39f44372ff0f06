package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	_ "image/jpeg" // --image and --mask may be JPEG
	"image/png"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"fashiond/config"
	"fashiond/diffusion"
	"fashiond/diffusion/scheduler"
)

// progressWidth is the width of the step bar in characters.
const progressWidth = 30

// cmdGenerate implements `fashiond generate`: one diffusion run of one
// installed model, with a progress bar and where the time went.
func cmdGenerate(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runGenerate(ctx, args, os.Stdout, os.Stderr)
}

type generateFlags struct {
	model, prompt, negative, method, image, mask, out string
	guidance, strength, eta                           float64
	steps, width, height                              int
	seed                                              int64
}

func (g *generateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.model, "model", "", "installed generative model (fashiond models)")
	fs.StringVar(&g.prompt, "prompt", "", "what to generate")
	fs.StringVar(&g.negative, "negative-prompt", "", "what to steer away from (with guidance > 1)")
	fs.Float64Var(&g.guidance, "guidance", diffusion.DefaultGuidance, "classifier-free guidance scale; <= 1 turns guidance off")
	fs.IntVar(&g.steps, "steps", diffusion.DefaultSteps, "denoising steps")
	fs.StringVar(&g.method, "scheduler", "", "euler|euler-a|ddim|dpm++2m|lcm|pndm (default: the model folder's own)")
	fs.Float64Var(&g.eta, "eta", 0, "DDIM eta in [0, 1]")
	fs.Int64Var(&g.seed, "seed", -1, "seed for a reproducible run (-1: a random one, printed)")
	fs.IntVar(&g.width, "width", 0, "width in pixels, a multiple of 8 (default: the image's, else the model's native size)")
	fs.IntVar(&g.height, "height", 0, "height in pixels, a multiple of 8")
	fs.StringVar(&g.image, "image", "", "input image: img2img, or inpainting with --mask")
	fs.StringVar(&g.mask, "mask", "", "inpainting mask (white = repaint), with --image")
	fs.Float64Var(&g.strength, "strength", 0, "img2img/inpainting strength in (0, 1] (default 0.8 img2img, 1 inpainting)")
	fs.StringVar(&g.out, "out", "", "output PNG file")
}

func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config.Config
	cfg.Register(fs)
	var g generateFlags
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	req, err := g.request(stderr)
	if err != nil {
		return err
	}
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	t0 := time.Now()
	m, err := diffusion.Open(ctx, rt, cfg.ModelsDir, g.model, diffusion.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	load := time.Since(t0)
	res, err := m.Generate(ctx, req)
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	if err := writePNG(g.out, res.Image); err != nil {
		return err
	}
	printTimings(stdout, m, res, load, g.out)
	return nil
}

// request checks the flags and reads the images.
func (g *generateFlags) request(stderr io.Writer) (diffusion.Request, error) {
	var req diffusion.Request
	switch {
	case g.model == "":
		return req, errors.New("--model is required (fashiond models lists the installed ones)")
	case g.out == "":
		return req, errors.New("--out FILE.png is required")
	case !strings.EqualFold(filepath.Ext(g.out), ".png"):
		return req, fmt.Errorf("--out %s: the output is a PNG file (.png)", g.out)
	case g.mask != "" && g.image == "":
		return req, errors.New("--mask needs --image (the picture to repaint)")
	case g.seed < -1:
		return req, fmt.Errorf("--seed %d: use a non-negative seed, or -1 for a random one", g.seed)
	}
	if g.method != "" {
		k, err := scheduler.ParseKind(g.method)
		if err != nil {
			return req, fmt.Errorf("--scheduler: %w", err)
		}
		req.Method = k
	}
	req = diffusion.Request{Prompt: g.prompt, NegativePrompt: g.negative, Guidance: g.guidance, Steps: g.steps,
		Method: req.Method, Eta: g.eta, Width: g.width, Height: g.height, Strength: g.strength,
		Seed: uint64(max(g.seed, 0)), RandomSeed: g.seed == -1}
	if g.guidance == 0 {
		req.Guidance = 1 // --guidance 0 means off, not the default
	}
	var err error
	if g.image != "" {
		if req.Image, err = readImage("--image", g.image); err != nil {
			return req, err
		}
	}
	if g.mask != "" {
		if req.Mask, err = readImage("--mask", g.mask); err != nil {
			return req, err
		}
	}
	req.Progress = func(done, total int) { drawBar(stderr, done, total) }
	return req, nil
}

func readImage(flagName, path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: not a PNG or JPEG image: %w", flagName, path, err)
	}
	return img, nil
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return f.Close()
}

// drawBar redraws the step bar on one terminal line.
func drawBar(w io.Writer, done, total int) {
	n := 0
	if total > 0 {
		n = done * progressWidth / total
	}
	fmt.Fprintf(w, "\rstep %d/%d [%s%s]", done, total, strings.Repeat("#", n), strings.Repeat(".", progressWidth-n))
}

func printTimings(w io.Writer, m *diffusion.Model, res *diffusion.Result, load time.Duration, out string) {
	t := res.Timings
	fmt.Fprintf(w, "wrote %s (%dx%d, %s, model %s [%s, %s on %s], %s, seed %d)\n", out,
		res.Image.Bounds().Dx(), res.Image.Bounds().Dy(), res.Mode, m.Name(), m.Task(), m.DType(), m.Device(), res.Method, res.Seed)
	ms := func(d time.Duration) string { return fmt.Sprintf("%8.1f ms", float64(d.Microseconds())/1000) }
	fmt.Fprintf(w, "  load model    %s\n", ms(load))
	fmt.Fprintf(w, "  tokenise      %s\n", ms(t.Tokenize))
	fmt.Fprintf(w, "  text encoder  %s\n", ms(t.TextEncoder))
	if t.VAEEncode > 0 {
		fmt.Fprintf(w, "  VAE encode    %s\n", ms(t.VAEEncode))
	}
	fmt.Fprintf(w, "  denoise       %s  (%d UNet calls, %s in ONNX Runtime)\n", ms(t.Denoise), t.Calls, strings.TrimSpace(ms(t.UNet)))
	fmt.Fprintf(w, "  VAE decode    %s\n", ms(t.VAEDecode))
	fmt.Fprintf(w, "  total         %s\n", ms(t.Total))
}
