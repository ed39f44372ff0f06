package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"fashiond/config"
	"fashiond/diffusion"
)

// defaultNoiseCount is `models noise`'s default length: the initial noise
// of a 512×512 SD job (4×64×64) and headroom for encoder draws.
const defaultNoiseCount = 4 * 64 * 64 * 3

// referenceFlags are `models verify`'s parity flags and `models noise`'s.
type referenceFlags struct {
	reference string
	name      string
	seed      uint64
	count     int
}

func (r *referenceFlags) register(fs *flag.FlagSet, sub string) {
	switch sub {
	case "verify":
		fs.StringVar(&r.reference, "reference", "", "a reference folder (scripts/export/sd.py --reference): compare the installed model --name with its picture")
		fs.StringVar(&r.name, "name", "", "the installed generative model to check against --reference")
	case "noise":
		fs.Uint64Var(&r.seed, "seed", 0, "the job seed whose noise to write")
		fs.IntVar(&r.count, "count", defaultNoiseCount, "how many float32 values to write")
	}
}

// verifyReference runs `fashiond models verify --reference DIR --name NAME`:
// one line with the largest difference and the tolerance; an error (exit
// status 1) when it is over.
func verifyReference(ctx context.Context, w io.Writer, cfg config.Config, r referenceFlags) error {
	if r.name == "" {
		return errors.New("fashiond models verify --reference: --name names the installed model to check")
	}
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	m, err := diffusion.Open(ctx, rt, cfg.ModelsDir, r.name, diffusion.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	rep, err := m.CheckReference(ctx, r.reference)
	if err != nil {
		return fmt.Errorf("fashiond models verify --reference: %w", err)
	}
	fmt.Fprintf(w, "%s vs %s (%s): %s\n", r.name, r.reference, rep.MadeBy, rep)
	if !rep.OK() {
		return fmt.Errorf("fashiond models verify --reference: %s differs from the reference by %.3g, over the tolerance %.3g", r.name, rep.MaxDiff, rep.Tolerance)
	}
	return nil
}

// writeNoise runs `fashiond models noise --seed N [--count C] FILE`: the
// engine's noise stream for the seed as little-endian float32, for a
// reference implementation to sample with.
func writeNoise(w io.Writer, r referenceFlags, out string) error {
	if r.count < 1 || r.count > 1<<28 {
		return fmt.Errorf("fashiond models noise: --count %d must be in 1..%d", r.count, 1<<28)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := diffusion.WriteFloats(f, diffusion.Noise(r.seed, r.count)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %d values of seed %d's noise to %s\n", r.count, r.seed, out)
	return nil
}
