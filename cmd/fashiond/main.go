// Command fashiond is the fashion image and video generation service: API,
// worker and operator commands in one binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

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
	switch name {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return
	case "-version", "--version", "-v":
		fmt.Println("fashiond", version)
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

// parseConfig registers the config flags of command name (plus extra ones),
// parses args and validates. The flags stay bound to the returned config, so
// a command that parses more arguments with fs (keys) sees their values.
func parseConfig(name, summary string, args []string, extra func(fs *flag.FlagSet)) (*config.Config, *flag.FlagSet, error) {
	cfg := new(config.Config)
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

// newLogger returns the logger cfg asks for and makes it the default, so
// that every line (the standard log package's and slog's package-level
// functions included) has the same format: in JSON mode no plain-text line
// is written.
func newLogger(cfg config.Config) *slog.Logger {
	return newLoggerTo(os.Stderr, cfg)
}

// newLoggerTo is newLogger writing to w.
func newLoggerTo(w io.Writer, cfg config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevel(cfg.LogLevel)}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	l := slog.New(h)
	slog.SetDefault(l)
	redis.SetLogger(redisLogger{l})
	return l
}

// logLevel maps a validated FASHIOND_LOG_LEVEL to its slog level.
func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// redisLogger sends go-redis's internal messages (connection pool and
// failover notices) to slog instead of plain text on stderr.
type redisLogger struct{ l *slog.Logger }

// Printf logs one go-redis message as a warning.
func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "from", "go-redis")
}
