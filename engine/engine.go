// Package engine wires every pipeline of the spec to the embedded model runtime:
// it opens ONNX Runtime, checks the model repository, loads the perception
// suite and the preset library, and returns the registry a worker serves.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"fashiond/config"
	"fashiond/diffusion"
	"fashiond/ffmpeg"
	"fashiond/inference"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/anglegeneration"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/presets"
	"fashiond/pipelines/imagetovideo"
	"fashiond/pipelines/modelcreate"
	"fashiond/pipelines/posecontrol"
	"fashiond/pipelines/producttomodel"
	"fashiond/pipelines/prompttryon"
	"fashiond/pipelines/tryon"
	"fashiond/spec"
)

// Required are the models every pipeline needs; depth is optional (the
// pipelines that use it fall back and say so).
var Required = []string{"blazepose_full", "selfie_segmentation", "skin_clothes_hair_pan", "yunet", "ultraface_rfb320", "realesr_general_x4v3"}

type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		if c[i] != nil {
			errs = append(errs, c[i].Close())
		}
	}
	return errors.Join(errs...)
}

// Observers receive the perception model calls and the UNet calls of the
// pipelines New builds (package metrics implements both); nil: none.
type Observers struct {
	Calls perception.CallObserver
	UNet  diffusion.BatchObserver
}

// New builds the registry of all seven pipelines. The returned Closer
// releases the models and the runtime.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*pipelines.Registry, io.Closer, error) {
	return NewObserved(ctx, cfg, log, Observers{})
}

// NewObserved is New with observers of the model and UNet calls.
func NewObserved(ctx context.Context, cfg config.Config, log *slog.Logger, obs Observers) (*pipelines.Registry, io.Closer, error) {
	repo, err := perception.OpenRepository(cfg.ModelsDir)
	if err != nil {
		return nil, nil, err
	}
	if err := repo.Require(Required...); err != nil {
		return nil, nil, fmt.Errorf("model repository %s: %w", cfg.ModelsDir, err)
	}
	rt, err := inference.Open(ctx, inference.Config{
		LibPath: cfg.ORTLib, IntraOpThreads: cfg.IntraOpThreads, Device: cfg.Device,
		CUDADeviceID: cfg.CUDADeviceID, CUDAMemLimit: cfg.CUDAMemLimit, CUDNNConvSearch: cfg.CUDNNConvAlgo,
		CUDARoute: cfg.CUDARoute, CUDAArenaExtend: cfg.CUDAArena,
	}, log)
	if err != nil {
		return nil, nil, err
	}
	cl := closers{rt}
	batching, err := Batching(rt, cfg.Batching)
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	suite, err := perception.NewSuite(ctx, rt, cfg.ModelsDir, perception.SuiteOptions{Batching: batching, UpscalePolicy: cfg.UpscalePolicy, Log: log, Observer: obs.Calls})
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	cl = append(cl, suite)
	var lib *presets.Library
	pdir := filepath.Join(cfg.DataDir, "presets")
	if _, err := os.Stat(pdir); err == nil {
		if lib, err = presets.Open(pdir); err != nil {
			cl.Close()
			return nil, nil, fmt.Errorf("preset library %s: %w", pdir, err)
		}
	} else {
		log.Warn("no preset model library", "dir", pdir)
	}
	roles := map[diffusion.Task]string{diffusion.Inpainting: cfg.GenerativeInpainting, diffusion.TextToImage: cfg.GenerativeTextToImage,
		diffusion.TryOn: cfg.GenerativeTryOn}
	gen, gcl, err := openGenerative(ctx, rt, cfg.ModelsDir, roles, diffusion.Options{Batching: batching, Observer: obs.UNet}, suite, log)
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	cl = append(cl, gcl)
	reg, skipped := Registry(suite, lib, gen)
	for model, why := range skipped {
		log.Warn("model not served by this worker", "model", model, "reason", why)
	}
	log.Info("pipelines ready", "models", reg.Names(), "ort", rt.Version(), "batching", batching)
	return reg, cl, nil
}

// Registry returns every pipeline that can run here on p: product-to-model
// and model-create need the preset library (lib may be nil), image-to-video
// needs ffmpeg. skipped names each model left out and why, so a worker never
// advertises a model whose jobs could only fail.
func Registry(p perception.Perception, lib *presets.Library, gen Generative) (reg *pipelines.Registry, skipped map[string]string) {
	skipped = map[string]string{}
	reg = pipelines.NewRegistry(
		prompttryon.New(p, lib).WithInpainter(gen.Inpainter),
		posecontrol.New(p).WithInpainter(gen.Inpainter),
		tryon.New(p).WithInpainter(gen.Inpainter).WithTryOner(gen.TryOner),
		anglegeneration.New(p).WithGenerative(gen.Inpainter, gen.Refiner),
	)
	if err := ffmpeg.Check(); err != nil {
		skipped[spec.ModelImageToVideo] = err.Error()
	} else {
		reg.Register(imagetovideo.New(p, imagetovideo.Options{Inpainter: gen.Inpainter}))
	}
	if lib == nil {
		skipped[spec.ModelProductToModel] = "no preset model library (make setup installs it)"
		skipped[spec.ModelModelCreate] = skipped[spec.ModelProductToModel]
	} else {
		reg.Register(producttomodel.New(p, lib).WithTextToImage(gen.TextToImage).WithTryOner(gen.TryOner))
		reg.Register(modelcreate.New(p, lib).WithTextToImage(gen.TextToImage).WithRefiner(gen.Refiner))
	}
	return reg, skipped
}

// Generative holds the installed generative models the pipelines use; a
// nil field keeps the classical path.
type Generative struct {
	// Inpainter is the node's inpainting model: prompt-tryon repaints the
	// garment region with it, tryon refines its warped garment, and
	// image-to-video paints the background beyond the photo's edges.
	Inpainter generative.Inpainter
	// Refiner is the node's img2img model (refinerOf): angle-generation
	// redraws its back and side views with it, model-create its re-posed
	// samples and the border of transferred faces.
	Refiner generative.Refiner
	// TextToImage is the node's text-to-image model.
	TextToImage generative.Generator
	// TryOner is the node's try-on model (CatVTON layout): tryon and
	// product-to-model put the garment on with it instead of the warp.
	TryOner generative.TryOner
}

// openGenerative loads the node's installed generative models by role:
// roles[task] names the model (FASHIOND_GENERATIVE_<ROLE>; "none" turns the
// role off), else the only installed model of the task, or none. Several
// models of one task and no name is an error naming them. The Closer
// releases what was loaded.
// openGenerative opens the node's generative models by role, with the
// models' options and the body-pose model FASHN VTON falls back to without
// DWPose (nil: none).
func openGenerative(ctx context.Context, rt *inference.Runtime, modelsDir string, roles map[diffusion.Task]string, opts diffusion.Options,
	body perception.BodyPoser, log *slog.Logger) (Generative, io.Closer, error) {
	var gen Generative
	var cl closers
	for _, task := range []diffusion.Task{diffusion.Inpainting, diffusion.TextToImage, diffusion.TryOn} {
		if roles[task] == roleOff {
			continue
		}
		if task == diffusion.TryOn {
			ton, c, ok, err := openFashnRole(ctx, rt, modelsDir, roles[task], opts, body, log)
			if err != nil {
				cl.Close()
				return Generative{}, closers{}, err
			}
			if ok {
				cl, gen.TryOner = append(cl, c), ton
				continue
			}
		}
		m, err := openRole(ctx, rt, modelsDir, task, roles[task], opts)
		if err != nil {
			cl.Close()
			return Generative{}, closers{}, err
		}
		if m == nil {
			continue
		}
		cl = append(cl, m)
		if err := gen.set(task, m); err != nil {
			cl.Close()
			return Generative{}, closers{}, err
		}
		log.Info("generative model in use", "role", task, "model", m.Name(), "dtype", m.DType(), "device", m.Device())
	}
	gen.Refiner = refinerOf(gen)
	return gen, cl, nil
}

// set wraps m as the capability of its role.
func (g *Generative) set(task diffusion.Task, m *diffusion.Model) error {
	var err error
	switch task {
	case diffusion.Inpainting:
		g.Inpainter, err = generative.NewDiffusion(m)
	case diffusion.TextToImage:
		g.TextToImage, err = generative.NewTextToImage(m)
	case diffusion.TryOn:
		g.TryOner, err = generative.NewTryOn(m)
	default:
		err = fmt.Errorf("generative role %s has no capability", task)
	}
	return err
}

// roleOff as a role's setting turns the role off.
const roleOff = "none"

// openRole loads the installed model of a task (named, or the only one),
// or nil when there is none.
func openRole(ctx context.Context, rt *inference.Runtime, modelsDir string, task diffusion.Task, name string, opts diffusion.Options) (*diffusion.Model, error) {
	name, err := diffusion.Choose(ctx, modelsDir, task, name)
	if err != nil || name == "" {
		return nil, err
	}
	return diffusion.Open(ctx, rt, modelsDir, name, opts)
}

// Batching resolves FASHIOND_BATCHING. "auto" batches on CUDA only: on this
// project's 2-core CPU nodes a batch of 4 is no faster than a pool of two
// sessions (fashiond bench: batched_speedup 0.92-0.97 for pose, selfie,
// parse and depth; 1.10 for SR tiles), while a GPU gains from filling the
// device.
func Batching(rt *inference.Runtime, mode string) (bool, error) {
	switch mode {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	dev, _, err := rt.DeviceFor("auto")
	if err != nil {
		return false, err
	}
	return dev == "cuda", nil
}

// refinerOf is the node's img2img model: the text-to-image model (the
// engine's img2img), else the inpainting model (inpainting at a strength
// below 1), else nil.
func refinerOf(g Generative) generative.Refiner {
	if t, ok := g.TextToImage.(*generative.TextToImage); ok {
		return t.Refiner()
	}
	if d, ok := g.Inpainter.(*generative.Diffusion); ok {
		return d.Refiner()
	}
	return nil
}
