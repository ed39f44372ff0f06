package diffusion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"fashiond/inference"
	"fashiond/onnxedit"
)

// Where installed models live: MODELS_DIR/diffusion/NAME/, each with its
// install record.
const (
	repoSubdir = "diffusion"
	recordFile = "fashiond-install.json"
	// dryRunFactors is the latent side of the install-time dry run (one
	// step): 8, because SD UNets halve the latents three times (64×64
	// pixels for SD).
	dryRunFactors = 8
)

// copied are the parts of an export folder that are installed; anything
// else in the folder (READMEs, the PyTorch weights, .git) is left behind.
var copied = []string{fileIndex, dirScheduler, dirTokenizer, dirText, dirUNet, dirVAEEncoder, dirVAEDecoder, "fashiond.json"}

var nameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Record is what `fashiond models install` wrote about a model.
type Record struct {
	Name      string    `json:"name"`
	Task      Task      `json:"task"`
	DType     string    `json:"dtype"`
	Source    string    `json:"source"`
	Installed time.Time `json:"installed"`
	MaxBatch  int       `json:"max_batch,omitempty"`
	// Files maps every installed file (relative path) to its SHA-256.
	Files    map[string]string `json:"files"`
	Adapters []Adapter         `json:"adapters,omitempty"`
	// Layout is the layout fashiond.json declares (try-on models).
	Layout string `json:"layout,omitempty"`
}

// Adapter is a graph rewritten at install time; its hash is in Files.
type Adapter struct {
	File   string `json:"file"`
	From   string `json:"from"`
	Input  string `json:"input"`
	Reason string `json:"reason"`
}

// InstallOptions name the model and check its task. Zero values: the
// folder's base name (lower-cased), the task the UNet implies, and
// DefaultMaxBatch.
type InstallOptions struct {
	Name     string
	Task     Task
	MaxBatch int
}

// RepoDir is where installed diffusion models live under a models dir.
func RepoDir(modelsDir string) string { return filepath.Join(modelsDir, repoSubdir) }

// Install validates the export folder src (its layout, every graph's
// tensors, and a one-step dry run at a tiny size), copies it into the
// repository under opts.Name with float16 rank-0 inputs adapted, and
// records every file's SHA-256.
func Install(ctx context.Context, rt *inference.Runtime, src, modelsDir string, opts InstallOptions) (*Record, error) {
	if opts.Name == "" {
		opts.Name = sanitizeName(filepath.Base(filepath.Clean(src)))
	}
	if !nameRule.MatchString(opts.Name) {
		return nil, fmt.Errorf("diffusion: install: name %q must match %s", opts.Name, nameRule)
	}
	if opts.Task != "" && opts.Task != TextToImage && opts.Task != Inpainting && opts.Task != TryOn {
		return nil, fmt.Errorf("diffusion: install: task %q must be %s, %s or %s", opts.Task, TextToImage, Inpainting, TryOn)
	}
	if _, err := os.Stat(filepath.Join(src, fileIndex)); err != nil && !isFashnFolder(src) {
		return nil, fmt.Errorf("diffusion: install: %s is not a Stable Diffusion ONNX export (nor a %s export with %s): %s: %w", src, LayoutFashnVTON, FileLayout, fileIndex, err)
	}
	dest := filepath.Join(RepoDir(modelsDir), opts.Name)
	if _, err := os.Stat(dest); err == nil {
		return nil, fmt.Errorf("diffusion: install: %s is already installed in %s (fashiond models remove %s first)", opts.Name, dest, opts.Name)
	}
	if err := os.MkdirAll(RepoDir(modelsDir), 0o755); err != nil {
		return nil, fmt.Errorf("diffusion: install: %w", err)
	}
	staging, err := os.MkdirTemp(RepoDir(modelsDir), ".staging-"+opts.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("diffusion: install: %w", err)
	}
	defer os.RemoveAll(staging)
	rec, err := stage(ctx, rt, src, staging, opts)
	if err != nil {
		return nil, fmt.Errorf("diffusion: install %s from %s: %w", opts.Name, src, err)
	}
	if err := os.Rename(staging, dest); err != nil {
		return nil, fmt.Errorf("diffusion: install: %w", err)
	}
	return rec, nil
}

// stage copies, adapts, validates and records the folder in staging.
func stage(ctx context.Context, rt *inference.Runtime, src, staging string, opts InstallOptions) (*Record, error) {
	if isFashnFolder(src) {
		return stageFashn(ctx, rt, src, staging, opts)
	}
	for _, part := range copied {
		if err := copyTree(ctx, filepath.Join(src, part), filepath.Join(staging, part)); err != nil {
			return nil, err
		}
	}
	adapters, err := adaptGraphs(staging)
	if err != nil {
		return nil, err
	}
	m, err := loadFolder(ctx, rt, staging, Options{Name: opts.Name, MaxBatch: opts.MaxBatch})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if err := checkTask(m, opts.Task); err != nil {
		return nil, err
	}
	if err := dryRun(ctx, m); err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	abs, _ := filepath.Abs(src)
	rec := &Record{Name: opts.Name, Task: m.Task(), DType: m.DType(), Source: abs, Installed: time.Now().UTC(),
		MaxBatch: opts.MaxBatch, Adapters: adapters}
	if l := m.Layout(); l != nil {
		rec.Layout = l.Layout
	}
	if rec.Files, err = hashTree(ctx, staging); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	return rec, os.WriteFile(filepath.Join(staging, recordFile), append(b, '\n'), 0o644)
}

// checkTask compares --task with the task the folder makes.
func checkTask(m *Model, task Task) error {
	switch {
	case task == "" || task == m.Task():
		return nil
	case m.Task() == TryOn:
		return fmt.Errorf("--task %s, but %s declares the %s layout, which makes it %s", task, FileLayout, m.Layout().Layout, TryOn)
	case task == TryOn:
		return fmt.Errorf("--task %s, but the folder has no %s declaring a try-on layout (it is a plain %s export)", task, FileLayout, m.Task())
	}
	return fmt.Errorf("--task %s, but %s/%s has %d input channels, which makes it %s", task, dirUNet, fileGraph, m.sig.inChannels, m.Task())
}

// adaptGraphs writes model.fashiond.onnx for every graph with a rank-0
// float16 input (onnxruntime_go cannot create one): the input becomes
// float32 with a Cast in front.
func adaptGraphs(dir string) ([]Adapter, error) {
	var out []Adapter
	for _, comp := range []string{dirText, dirUNet, dirVAEEncoder, dirVAEDecoder} {
		os.Remove(filepath.Join(dir, comp, fileAdapter)) // never trust a shipped one
		path := filepath.Join(dir, comp, fileGraph)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		ins, _, err := onnxedit.Inspect(path)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", comp, fileGraph, err)
		}
		cur := path
		for _, in := range ins {
			if in.Elem != onnxedit.Float16 || len(in.Dims) != 0 {
				continue
			}
			dst := filepath.Join(dir, comp, fileAdapter)
			if err := onnxedit.CastInput(cur, dst, in.Name, onnxedit.Float); err != nil {
				return nil, err
			}
			cur = dst
			out = append(out, Adapter{File: filepath.Join(comp, fileAdapter), From: filepath.Join(comp, fileGraph), Input: in.Name,
				Reason: "rank-0 float16 input re-declared float32 with a Cast in front (onnxruntime_go cannot create rank-0 float16 tensors)"})
		}
	}
	return out, nil
}

// dryRun generates one step at a tiny size and checks the output is finite.
func dryRun(ctx context.Context, m *Model) error {
	side := dryRunFactors * m.sig.vaeFactor
	if m.Task() == TryOn {
		return dryRunTryOn(ctx, m, side)
	}
	req := Request{Prompt: "a test", Guidance: 2, Steps: 1, Width: side, Height: side}
	if m.Task() == Inpainting {
		img := image.NewGray(image.Rect(0, 0, side, side))
		for i := range img.Pix {
			img.Pix[i] = uint8(i * 255 / len(img.Pix))
		}
		mask := image.NewUniform(color.White)
		req.Image, req.Mask = img, &boundedUniform{mask, img.Rect}
	}
	res, err := m.Generate(ctx, req)
	if err != nil {
		return err
	}
	return checkFinite(res)
}

// checkFinite refuses a result with NaN pixels.
func checkFinite(res *Result) error {
	for _, v := range res.Pixels {
		if math.IsNaN(float64(v)) {
			return errors.New("the VAE decoder produced NaN")
		}
	}
	return nil
}

// boundedUniform is a uniform colour with bounds.
type boundedUniform struct {
	*image.Uniform
	r image.Rectangle
}

func (b *boundedUniform) Bounds() image.Rectangle { return b.r }

func sanitizeName(s string) string {
	out := []byte{}
	for _, c := range []byte(s) {
		switch {
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			out = append(out, c)
		default:
			out = append(out, '-')
		}
	}
	return string(out)
}

// copyTree copies a file or a directory tree; a missing source is skipped
// (Load says what is required).
func copyTree(ctx context.Context, src, dst string) error {
	// A component may be a link to another folder's (exports that share a
	// text encoder or tokenizer); the copy holds the files.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	st, err := os.Stat(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return copyFile(ctx, src, dst)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		return copyFile(ctx, p, filepath.Join(dst, rel))
	})
}

func copyFile(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// hashTree hashes every regular file under dir except the record.
func hashTree(ctx context.Context, dir string) (map[string]string, error) {
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == recordFile {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sum, err := fileSHA256(p)
		sums[rel] = sum
		return err
	})
	return sums, err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Installed is one model in the repository and whether its files verify.
type Installed struct {
	Record Record
	Dir    string
	// State is "verified", "hash mismatch", "missing file" or "unreadable".
	State string
	Err   error
}

// List reads (and, with verify, re-hashes) every installed model, sorted by
// name. A missing repository is an empty list.
func List(ctx context.Context, modelsDir string, verify bool) ([]Installed, error) {
	entries, err := os.ReadDir(RepoDir(modelsDir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Installed
	for _, e := range entries {
		if !e.IsDir() || e.Name()[0] == '.' {
			continue
		}
		out = append(out, inspectInstalled(ctx, filepath.Join(RepoDir(modelsDir), e.Name()), verify))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Record.Name < out[j].Record.Name })
	return out, nil
}

func inspectInstalled(ctx context.Context, dir string, verify bool) Installed {
	in := Installed{Dir: dir, State: "verified"}
	in.Record.Name = filepath.Base(dir)
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err == nil {
		err = json.Unmarshal(b, &in.Record)
	}
	if err != nil {
		in.State, in.Err = "unreadable", fmt.Errorf("%s: %w", recordFile, err)
		return in
	}
	names := make([]string, 0, len(in.Record.Files))
	for rel := range in.Record.Files {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err != nil {
			in.State, in.Err = "missing file", fmt.Errorf("%s: %w", rel, err)
			return in
		}
		if !verify {
			continue
		}
		sum, err := fileSHA256(p)
		if err != nil || sum != in.Record.Files[rel] {
			in.State, in.Err = "hash mismatch", fmt.Errorf("%s: sha256 %s, recorded %s", rel, sum, in.Record.Files[rel])
			return in
		}
		if ctx.Err() != nil {
			in.State, in.Err = "unreadable", ctx.Err()
			return in
		}
	}
	return in
}

// Remove deletes an installed model.
func Remove(modelsDir, name string) error {
	if !nameRule.MatchString(name) {
		return fmt.Errorf("diffusion: remove: name %q must match %s", name, nameRule)
	}
	dir := filepath.Join(RepoDir(modelsDir), name)
	if _, err := os.Stat(filepath.Join(dir, recordFile)); err != nil {
		return fmt.Errorf("diffusion: remove: no installed model %q in %s", name, RepoDir(modelsDir))
	}
	return os.RemoveAll(dir)
}

// Open loads an installed model by name; files must be present (List with
// verify checks their hashes). opts.MaxBatch zero takes the record's.
func Open(ctx context.Context, rt *inference.Runtime, modelsDir, name string, opts Options) (*Model, error) {
	if !nameRule.MatchString(name) {
		return nil, fmt.Errorf("diffusion: model name %q must match %s", name, nameRule)
	}
	dir := filepath.Join(RepoDir(modelsDir), name)
	in := inspectInstalled(ctx, dir, false)
	if in.State != "verified" {
		if os.IsNotExist(errors.Unwrap(in.Err)) {
			return nil, fmt.Errorf("diffusion: no installed model %q in %s (fashiond models install --name %s DIR)", name, RepoDir(modelsDir), name)
		}
		return nil, fmt.Errorf("diffusion: model %s: %s: %w", name, in.State, in.Err)
	}
	if in.Record.Layout == LayoutFashnVTON {
		return nil, fmt.Errorf("diffusion: model %s has the %s layout: open it with diffusion.OpenFashnVTON", name, LayoutFashnVTON)
	}
	opts.Name = name
	if opts.MaxBatch == 0 {
		opts.MaxBatch = in.Record.MaxBatch
	}
	return loadFolder(ctx, rt, dir, opts)
}

// FormatBytes is a size for listings (e.g. "1.6 GiB").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for x := n / unit; x >= unit; x /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Choose names the installed model that serves task on this node: name when
// given (it must be installed, verified present and of that task), else the
// only installed model of the task. No model of the task is "" and no
// error; several without a name is an error that lists them.
func Choose(ctx context.Context, modelsDir string, task Task, name string) (string, error) {
	list, err := List(ctx, modelsDir, false)
	if err != nil {
		return "", err
	}
	var of []string
	for _, in := range list {
		if in.Record.Task == task && in.State == "verified" {
			of = append(of, in.Record.Name)
		}
	}
	switch {
	case name != "" && !slices.Contains(of, name):
		return "", fmt.Errorf("diffusion: %s model %q is not installed in %s (installed %s models: %v)", task, name, RepoDir(modelsDir), task, of)
	case name != "":
		return name, nil
	case len(of) > 1:
		return "", fmt.Errorf("diffusion: %d %s models are installed (%v): choose one (FASHIOND_GENERATIVE_%s)", len(of), task, of, envRole(task))
	case len(of) == 1:
		return of[0], nil
	}
	return "", nil
}

// envRole is the role's part of its FASHIOND_GENERATIVE_* setting.
func envRole(t Task) string {
	return strings.ToUpper(strings.ReplaceAll(string(t), "-", "_"))
}
