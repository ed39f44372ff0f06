// Command noise writes the standard normal stream fashiond's diffusion
// engine draws for a seed (diffusion.Noise) as little-endian float32, for
// the reference scripts that feed it to diffusers:
//
//	go run ./scripts/reference/noise -seed 7 -count 6144 -out noise.f32
package main

import (
	"flag"
	"fmt"
	"os"

	"fashiond/diffusion"
)

func main() {
	seed := flag.Uint64("seed", 0, "the job's seed")
	count := flag.Int("count", 6144, "how many values to write")
	out := flag.String("out", "", "output file")
	flag.Parse()
	if err := run(*seed, *count, *out); err != nil {
		fmt.Fprintln(os.Stderr, "noise:", err)
		os.Exit(1)
	}
}

func run(seed uint64, count int, out string) error {
	if out == "" || count < 1 {
		return fmt.Errorf("-out FILE and -count N (N >= 1) are required")
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := diffusion.WriteFloats(f, diffusion.Noise(seed, count)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
