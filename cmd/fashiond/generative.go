package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"fashiond/config"
	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/perception"
)

// parseInterleaved parses flags that may come before or after positional
// arguments (`install DIR --name x` and `install --name x DIR`).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// genInstallFlags are the flags of `fashiond models install DIR`.
type genInstallFlags struct {
	name, task string
	maxBatch   int
}

func (g *genInstallFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.name, "name", "", "install DIR under this name (default: the folder's name)")
	fs.StringVar(&g.task, "task", "", "expected task: text-to-image, inpainting or try-on (default: try-on when the folder's fashiond.json declares a try-on layout, else inferred from the UNet's in_channels)")
	fs.IntVar(&g.maxBatch, "max-batch", 0, fmt.Sprintf("most UNet rows per call when jobs batch (default %d)", diffusion.DefaultMaxBatch))
}

// openRuntime opens ONNX Runtime with the configured device settings.
func openRuntime(ctx context.Context, cfg config.Config) (*inference.Runtime, error) {
	return inference.Open(ctx, runtimeConfig(cfg), slog.New(slog.DiscardHandler))
}

// installGenerative runs `fashiond models install DIR`.
func installGenerative(ctx context.Context, w io.Writer, cfg config.Config, g genInstallFlags, dir string) error {
	if g.maxBatch < 0 {
		return fmt.Errorf("fashiond models install: --max-batch %d must be positive", g.maxBatch)
	}
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	if perception.HasDWPose(dir) {
		return installDWPose(ctx, w, rt, cfg, dir)
	}
	fmt.Fprintf(w, "validating %s (layout, graph tensors, one-step dry run)\n", dir)
	rec, err := diffusion.Install(ctx, rt, dir, cfg.ModelsDir, diffusion.InstallOptions{
		Name: g.name, Task: diffusion.Task(g.task), MaxBatch: g.maxBatch,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "installed %s (%s, %s, %d files hashed) into %s\n", rec.Name, rec.Task, rec.DType, len(rec.Files), diffusion.RepoDir(cfg.ModelsDir))
	for _, a := range rec.Adapters {
		fmt.Fprintf(w, "adapter %s: input %s of %s: %s\n", a.File, a.Input, a.From, a.Reason)
	}
	fmt.Fprintln(w, tryItLine(rec.Name, rec.Task))
	return nil
}

// tryItLine tells the operator how an installed model is used: a
// `fashiond generate` example for text-to-image and inpainting models; a
// try-on model takes a person, a garment and a mask, which only the tryon
// and product-to-model pipelines give it (through the API).
func tryItLine(name string, task diffusion.Task) string {
	switch task {
	case diffusion.TryOn:
		return fmt.Sprintf("used by the API's tryon and product-to-model jobs (fashiond serve or worker; FASHIOND_GENERATIVE_TRY_ON=%s "+
			"when several try-on models are installed): the model puts the garment photo on the person over the garment region; "+
			"`fashiond generate` takes a prompt and does not run try-on models", name)
	case diffusion.Inpainting:
		return fmt.Sprintf("try it: fashiond generate --model %s --image photo.png --mask mask.png --prompt \"a denim shirt\" --out out.png", name)
	}
	return fmt.Sprintf("try it: fashiond generate --model %s --prompt \"a linen shirt on a hanger\" --out out.png", name)
}

// printGenerative lists installed diffusion models with their verified
// state, task, dtype and device; it reports whether all verify.
func printGenerative(ctx context.Context, w io.Writer, cfg config.Config) bool {
	list, err := diffusion.List(ctx, cfg.ModelsDir, true)
	if err != nil {
		fmt.Fprintf(w, "generative models: %v\n", err)
		return false
	}
	fmt.Fprintf(w, "\nDWPose (FASHN VTON's pose model): %s\n", perception.DWPoseStatus(ctx, cfg.ModelsDir))
	fmt.Fprintf(w, "\ngenerative models (%s):\n", diffusion.RepoDir(cfg.ModelsDir))
	if len(list) == 0 {
		fmt.Fprintln(w, "  none installed (fashiond models install [--name NAME] DIR; see docs/GENERATIVE.md)")
		return true
	}
	dev := "?"
	if rt, err := openRuntime(ctx, cfg); err == nil {
		if d, _, err := rt.DeviceFor("auto"); err == nil {
			dev = d
		}
		rt.Close()
	}
	ok := true
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTASK\tDTYPE\tSTATE\tDEVICE\tADAPTERS\tSOURCE")
	for _, in := range list {
		r := in.Record
		state := in.State
		if in.Err != nil {
			state += ": " + in.Err.Error()
			ok = false
		}
		ad := make([]string, 0, len(r.Adapters))
		for _, a := range r.Adapters {
			ad = append(ad, a.File)
		}
		adapters := "-"
		if len(ad) > 0 {
			adapters = strings.Join(ad, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Task, r.DType, state, dev, adapters, r.Source)
	}
	tw.Flush()
	return ok
}

// installDWPose installs DWPose's two graphs (FASHN VTON's pose model).
func installDWPose(ctx context.Context, w io.Writer, rt *inference.Runtime, cfg config.Config, dir string) error {
	fmt.Fprintf(w, "validating DWPose in %s (%s, %s: tensors, a dry run)\n", dir, perception.FileYOLOX, perception.FileDWPose)
	rec, err := perception.InstallDWPose(ctx, rt, dir, cfg.ModelsDir)
	if err != nil {
		return err
	}
	for f, sum := range rec.Files {
		fmt.Fprintf(w, "installed %s (sha256 %s)\n", f, sum)
	}
	fmt.Fprintf(w, "FASHN VTON try-on models draw their pose maps with it from the next start of fashiond serve or worker\n")
	return nil
}
