// Command fashiond is the fashion image and video generation service: API,
// worker and operator commands in one binary.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"fashiond/config"
)

var version = "0.1.0-dev"

type command struct {
	name, summary string
	run           func(args []string) error
}

func commands() []command {
	return []command{
		{"serve", "API + worker + local storage in one process (embedded defaults)", cmdServe},
		{"api", "HTTP API only (split deployment; needs FASHIOND_REDIS_URL)", cmdAPI},
		{"worker", "job worker only (split deployment; needs FASHIOND_REDIS_URL)", cmdWorker},
		{"keys", "API keys: create, list, add-credits", cmdKeys},
		{"models", "model repository: list, verify, install, remove", cmdModels},
		{"generate", "run one installed diffusion model (text-to-image, img2img, inpainting)", cmdGenerate},
		{"bench", "benchmark model stages and pipelines", cmdBench},
		{"version", "print the version", cmdVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "fashiond %s — fashion image and video generation service\n\nUsage: fashiond <command> [flags]\n\nCommands:\n", version)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `fashiond <command> --help` for the flags of a command. Every flag also")
	fmt.Fprintln(w, "reads a FASHIOND_* environment variable (see README.md).")
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		usage(os.Stdout)
		return
	}
	for _, c := range commands() {
		if c.name == name {
			err := c.run(os.Args[2:])
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "fashiond %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "fashiond: unknown command %q\n\n", name)
	usage(os.Stderr)
	os.Exit(2)
}

func cmdVersion(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Println("fashiond", version)
	return nil
}

// parseConfig registers the config flags (plus extra ones) and parses args.
func parseConfig(name, summary string, args []string, extra func(fs *flag.FlagSet)) (config.Config, *flag.FlagSet, error) {
	var cfg config.Config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: fashiond %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	cfg.Register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, fs, err
	}
	return cfg, fs, cfg.Finish()
}

func newLogger(cfg config.Config) *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(cfg.LogLevel) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
