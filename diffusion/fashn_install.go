package diffusion

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"fashiond/inference"
)

// fashnCopied are the parts of a fashn-vton export that are installed.
var fashnCopied = []string{FileLayout, dirTransformer}

// stageFashn installs a fashn-vton export into staging: fashiond.json is
// validated first (errors name the field), then the transformer is copied,
// loaded and checked against the layout, a one-step dry run at the model's
// size must give finite values, and every file is hashed.
func stageFashn(ctx context.Context, rt *inference.Runtime, src, staging string, opts InstallOptions) (*Record, error) {
	if opts.Task != "" && opts.Task != TryOn {
		return nil, fmt.Errorf("--task %s, but %s declares the %s layout, which makes it %s", opts.Task, FileLayout, LayoutFashnVTON, TryOn)
	}
	if _, err := readFashnLayout(src); err != nil {
		return nil, err
	}
	if _, rel, err := graphFile(src, dirTransformer); err != nil {
		return nil, fmt.Errorf("%s: missing (a %s export has the transformer there, with its external data beside it)", rel, LayoutFashnVTON)
	}
	for _, part := range fashnCopied {
		if err := copyTree(ctx, filepath.Join(src, part), filepath.Join(staging, part)); err != nil {
			return nil, err
		}
	}
	// A shipped adapter is never trusted; this layout has none.
	os.Remove(filepath.Join(staging, dirTransformer, fileAdapter))
	m, err := LoadFashnVTON(ctx, rt, staging, Options{Name: opts.Name, MaxBatch: opts.MaxBatch})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := dryRunFashn(ctx, m); err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	abs, _ := filepath.Abs(src)
	rec := &Record{Name: opts.Name, Task: TryOn, DType: m.DType(), Source: abs, Installed: time.Now().UTC(),
		MaxBatch: opts.MaxBatch, Layout: LayoutFashnVTON}
	if rec.Files, err = hashTree(ctx, staging); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	return rec, os.WriteFile(filepath.Join(staging, recordFile), append(b, '\n'), 0o644)
}

// dryRunFashn runs one unguided step at the model's size on a gradient
// person, a flat garment and empty pose maps; TryOn refuses NaN.
func dryRunFashn(ctx context.Context, m *FashnModel) error {
	l := m.layout
	hw := l.Width * l.Height
	person := make([]float32, 3*hw)
	for i := range person {
		person[i] = float32(i%hw)/float32(hw)*2 - 1
	}
	garment := make([]float32, 3*hw)
	for i := range garment {
		garment[i] = 0.3
	}
	pose := make([]float32, hw)
	for i := range pose {
		pose[i] = -1
	}
	_, err := m.TryOn(ctx, FashnRequest{Person: person, Garment: garment, PersonPose: pose, GarmentPose: pose,
		Category: CategoryTops, Steps: 1, Guidance: 1, Seed: 1})
	return err
}

// OpenFashnVTON loads an installed fashn-vton model by name; its files must
// be present (List with verify checks their hashes). opts.MaxBatch zero
// takes the record's.
func OpenFashnVTON(ctx context.Context, rt *inference.Runtime, modelsDir, name string, opts Options) (*FashnModel, error) {
	if !nameRule.MatchString(name) {
		return nil, fmt.Errorf("diffusion: model name %q must match %s", name, nameRule)
	}
	dir := filepath.Join(RepoDir(modelsDir), name)
	in := inspectInstalled(ctx, dir, false)
	if in.State != "verified" {
		return nil, fmt.Errorf("diffusion: model %s: %s: %w", name, in.State, in.Err)
	}
	if in.Record.Layout != LayoutFashnVTON {
		return nil, fmt.Errorf("diffusion: model %s is a %s model with layout %q, not %s", name, in.Record.Task, in.Record.Layout, LayoutFashnVTON)
	}
	opts.Name = name
	if opts.MaxBatch == 0 {
		opts.MaxBatch = in.Record.MaxBatch
	}
	return LoadFashnVTON(ctx, rt, dir, opts)
}

// LayoutOf is the layout an installed model's record names ("" for a plain
// Stable Diffusion export).
func LayoutOf(ctx context.Context, modelsDir, name string) (string, error) {
	if !nameRule.MatchString(name) {
		return "", fmt.Errorf("diffusion: model name %q must match %s", name, nameRule)
	}
	in := inspectInstalled(ctx, filepath.Join(RepoDir(modelsDir), name), false)
	if in.State == "unreadable" {
		return "", fmt.Errorf("diffusion: model %s: %w", name, in.Err)
	}
	return in.Record.Layout, nil
}
