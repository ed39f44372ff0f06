package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"fashiond/config"
	"fashiond/diffusion"
	"fashiond/inference"
	"fashiond/perception"
)

// cmdModels implements `fashiond models [list|verify|install] [flags]`:
//
//	list     the table of models: name, task, file, state, licence, the
//	         device a session would use, and the batch rewrite state
//	verify   the same table; exits non-zero when a required model is
//	         missing or corrupt
//	install  installs the perception models from the mirror
//	         (FASHIOND_MODELS_MIRROR, default ../shared/models when present),
//	         else FASHIOND_MODELS_URL, else their origins (npm + converters
//	         under scripts/origins, GitHub URLs; docs/ORIGINS.md), verifying
//	         every hash
//	install DIR
//	         installs a Stable Diffusion ONNX export (Optimum layout) as a
//	         generative model (see docs/GENERATIVE.md)
//	remove NAME
//	         removes an installed generative model
//	verify --reference DIR --name NAME
//	         compares an installed generative model's picture with a
//	         reference folder's (scripts/export/sd.py --reference)
//	noise --seed N FILE
//	         writes the engine's noise stream for a seed (float32)
func cmdModels(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return runModels(ctx, args, os.Stdout)
}

func runModels(ctx context.Context, args []string, w io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("models "+sub, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintln(w, "usage: fashiond models [list|verify|install] [flags]")
		fmt.Fprintln(w, "       fashiond models install [--name NAME] [--task text-to-image|inpainting] [--max-batch N] DIR")
		fmt.Fprintln(w, "       fashiond models remove NAME")
		fmt.Fprintln(w, "       fashiond models verify --reference DIR --name NAME")
		fmt.Fprintln(w, "       fashiond models noise --seed N [--count C] FILE")
		fs.PrintDefaults()
	}
	var cfg config.Config
	cfg.Register(fs)
	var gen genInstallFlags
	if sub == "install" {
		gen.register(fs)
	}
	var ref referenceFlags
	ref.register(fs, sub)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	switch {
	case sub == "install" && len(pos) == 1:
		return installGenerative(ctx, w, cfg, gen, pos[0])
	case sub == "noise" && len(pos) == 1:
		return writeNoise(w, ref, pos[0])
	case sub == "noise":
		return errors.New("fashiond models noise: name the output file (fashiond models noise --seed N FILE)")
	case sub == "verify" && ref.reference != "":
		return verifyReference(ctx, w, cfg, ref)
	case sub == "remove" && len(pos) == 1:
		if err := diffusion.Remove(cfg.ModelsDir, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(w, "removed %s from %s\n", pos[0], diffusion.RepoDir(cfg.ModelsDir))
		return nil
	case sub == "remove":
		return errors.New("fashiond models remove: name the model to remove (fashiond models remove NAME)")
	case len(pos) > 0:
		return fmt.Errorf("fashiond models: unexpected argument %q", pos[0])
	}
	repo, err := perception.OpenRepository(cfg.ModelsDir)
	if err != nil {
		return err
	}
	switch sub {
	case "list", "verify":
		states := repo.Verify(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		printModels(ctx, w, cfg, repo, states)
		generativeOK := printGenerative(ctx, w, cfg)
		if sub == "verify" && !generativeOK {
			return errors.New("fashiond models verify: an installed generative model does not verify")
		}
		if sub == "verify" {
			if err := repo.Require(); err != nil {
				return fmt.Errorf("fashiond models verify: %w", err)
			}
			fmt.Fprintln(w, "all required models verified")
		}
		return nil
	case "install":
		fmt.Fprintf(w, "installing into %s\n", repo.Dir())
		from, err := installPerception(ctx, cfg, repo, slog.New(slog.NewTextHandler(w, nil)))
		if errors.Is(err, errNoSource) {
			return fmt.Errorf("fashiond models install: %w (set FASHIOND_MODELS_MIRROR / --models-mirror or FASHIOND_MODELS_URL / --models-url, or run it from the repository root)", err)
		}
		fmt.Fprintf(w, "source: %s\n", from)
		printModels(ctx, w, cfg, repo, repo.Verify(ctx))
		for _, st := range repo.Verify(ctx) {
			if st.Manifest.BatchFile != "" && st.OK() && st.BatchState != perception.StateVerified {
				fmt.Fprintln(w, "batch rewrites are made by `make setup-models` (scripts/rewrite_batch.py); until then those models run unbatched")
				break
			}
		}
		return err
	default:
		fs.Usage()
		return fmt.Errorf("fashiond models: unknown subcommand %q", sub)
	}
}

// printModels writes the model table and the device summary.
func printModels(ctx context.Context, w io.Writer, cfg config.Config, repo *perception.Repository, states []perception.ModelState) {
	fmt.Fprintf(w, "model repository: %s\n", repo.Dir())
	deviceFor := func(string) (string, string) { return "?", "" }
	rt, err := inference.Open(ctx, runtimeConfig(cfg), slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Fprintf(w, "ONNX Runtime: unavailable: %v\n", err)
	} else {
		defer rt.Close()
		fmt.Fprintf(w, "ONNX Runtime %s from %s, FASHIOND_DEVICE=%s\n", rt.Version(), cfg.ORTLib, cfg.Device)
		fmt.Fprintf(w, "GPU: %s\n", rt.CUDA())
		if p, err := rt.Placement("auto"); err != nil {
			fmt.Fprintf(w, "inference device: none: %v\n", err)
		} else if p.Reason != "" {
			fmt.Fprintf(w, "inference device: cpu (CUDA not used: %s)\n", p.Reason)
		} else {
			fmt.Fprintf(w, "inference device: %s\n", p)
		}
		reasons := map[string]bool{}
		deviceFor = func(pref string) (string, string) {
			p, err := rt.Placement(pref)
			if err != nil {
				return "none", err.Error()
			}
			dev := p.Device
			if dev == "cuda" {
				dev = fmt.Sprintf("cuda:%d/%s", p.DeviceID, p.Route)
			}
			if p.Reason != "" && !reasons[p.Reason] {
				reasons[p.Reason] = true
				return dev, p.Reason
			}
			return dev, ""
		}
	}
	var notes []string
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTASK\tFILE\tSTATE\tLICENCE\tDEVICE\tBATCH")
	for _, st := range states {
		m := st.Manifest
		file := m.File
		if file == "" {
			file = "-"
		}
		dev, note := "-", ""
		if m.File != "" {
			dev, note = deviceFor(m.Device)
		}
		if note != "" {
			notes = append(notes, "device: "+note)
		}
		state := string(st.State)
		if m.Generative && st.State == perception.StateNotInstalled {
			state = "not installed (optional, generative)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Task, file, state, m.License, dev, batchColumn(m, st))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// batchColumn says how the model batches: through a verified rewrite, or
// not at all (served by a session pool).
func batchColumn(m perception.Manifest, st perception.ModelState) string {
	switch {
	case m.File == "":
		return "-"
	case m.MaxBatch <= 1:
		return "pool (batch 1)"
	case m.BatchNative:
		return fmt.Sprintf("native, max %d", m.MaxBatch)
	case m.BatchFile == "":
		return "pool (no rewrite)"
	case st.BatchState == perception.StateVerified:
		return fmt.Sprintf("rewrite verified, max %d", m.MaxBatch)
	default:
		return "rewrite " + string(st.BatchState) + " (pool)"
	}
}
