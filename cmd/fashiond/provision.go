package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"fashiond/config"
	"fashiond/models"
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
func missingModels(repo *models.Repository) []string {
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

// provisionModels fills a fresh model repository (FASHIOND_MODELS_DIR,
// default DATA_DIR/models) before a worker opens it: from the mirror
// (FASHIOND_MODELS_MIRROR or ../shared/models), every file checked against
// its manifest's SHA-256. With no mirror it refuses to start with commands
// that fill this very directory.
func provisionModels(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	repo, err := models.OpenRepository(cfg.ModelsDir)
	if err != nil {
		return err
	}
	presetsAdvice(cfg, log)
	missing := missingModels(repo)
	if len(missing) == 0 {
		return nil
	}
	mirror := modelsMirror(cfg)
	if mirror == "" {
		return noMirrorError(repo.Dir(), missing)
	}
	log.Info("model repository incomplete: installing from the mirror", "dir", repo.Dir(), "mirror", mirror, "missing", strings.Join(missing, ","))
	if err := repo.Install(ctx, mirror); err != nil {
		return fmt.Errorf("installing the models into %s from %s: %w", repo.Dir(), mirror, err)
	}
	log.Info("models installed", "dir", repo.Dir())
	return nil
}

// noMirrorError is the refusal when models are missing and no mirror is
// found; each command it gives fills repoDir itself.
func noMirrorError(repoDir string, missing []string) error {
	if abs, err := filepath.Abs(repoDir); err == nil {
		repoDir = abs
	}
	return fmt.Errorf("models %s are not installed in %s and no model mirror was found (FASHIOND_MODELS_MIRROR unset, no %s here). Install them with one of:\n"+
		"  fashiond models install --models-dir %s --models-mirror /path/to/models\n"+
		"  FASHIOND_MODELS_DIR=%s make setup-models   # in the repository, with ../shared/models beside it or FASHIOND_MODELS_URL set\n"+
		"or start again with FASHIOND_MODELS_MIRROR=/path/to/models to install them at start",
		strings.Join(missing, ", "), repoDir, defaultMirrorDir, shellQuote(repoDir), shellQuote(repoDir))
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
		shellQuote(data)+" make setup-presets` in the repository (with ../shared/testdata/images beside it, or FASHIOND_PRESETS_SRC set) and restart",
		"dir", dir)
}
