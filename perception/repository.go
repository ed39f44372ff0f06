package perception

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"fashiond/inference"
	"fashiond/internal/ctxio"
)

// State is the verification state of one model file.
type State string

// Model file states as `fashiond models` prints them.
const (
	StateVerified     State = "verified"
	StateMissing      State = "missing"
	StateMismatch     State = "hash mismatch"
	StateNotInstalled State = "not installed (optional)"
	StateUnreadable   State = "unreadable"
	StateNone         State = "none" // no batch rewrite declared
)

// ModelState is the result of verifying one model.
type ModelState struct {
	Manifest Manifest
	Path     string // where the file is (or would be)
	State    State
	Err      error // why, when State is not verified
	// Batch rewrite (Manifest.BatchFile) state and path.
	BatchPath  string
	BatchState State
}

// OK reports whether the model can be loaded.
func (s ModelState) OK() bool { return s.State == StateVerified }

// Repository is a model directory checked against the manifests.
type Repository struct {
	dir    string
	byName map[string]Manifest
	names  []string

	mu    sync.Mutex
	cache map[string]hashEntry // path -> last hash
}

type hashEntry struct {
	size int64
	mod  time.Time
	sum  string
}

// OpenRepository opens the model repository in dir with the committed
// manifests. Manifests in dir/manifests/*.json (an operator installing a
// generative model, or a newer file) replace committed ones of the same
// name or add new models. A missing dir is not an error: every model is then
// reported missing.
func OpenRepository(dir string) (*Repository, error) {
	if dir == "" {
		return nil, errors.New("models: no repository directory (set FASHIOND_MODELS_DIR)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("models: repository %s: %w", dir, err)
	}
	list, err := LoadManifests()
	if err != nil {
		return nil, err
	}
	r := &Repository{dir: abs, byName: map[string]Manifest{}, cache: map[string]hashEntry{}}
	for _, m := range list {
		r.byName[m.Name] = m
	}
	over := filepath.Join(abs, "manifests")
	if st, err := os.Stat(over); err == nil && st.IsDir() {
		extra, err := loadManifestsFS(os.DirFS(abs), "manifests")
		if err != nil {
			return nil, fmt.Errorf("models: operator manifests in %s: %w", over, err)
		}
		for _, m := range extra {
			r.byName[m.Name] = m
		}
	}
	for n := range r.byName {
		r.names = append(r.names, n)
	}
	sort.Strings(r.names)
	return r, nil
}

// Dir is the repository directory (absolute).
func (r *Repository) Dir() string { return r.dir }

// Names lists every model with a manifest, sorted.
func (r *Repository) Names() []string { return append([]string(nil), r.names...) }

// Manifest returns the manifest of a model.
func (r *Repository) Manifest(name string) (Manifest, bool) {
	m, ok := r.byName[name]
	return m, ok
}

// Manifests returns every manifest, sorted by name.
func (r *Repository) Manifests() []Manifest {
	out := make([]Manifest, 0, len(r.names))
	for _, n := range r.names {
		out = append(out, r.byName[n])
	}
	return out
}

// Path is the file of a model. It checks presence only (Require and Verify
// check hashes); the error names the model and says how to fix it.
func (r *Repository) Path(name string) (string, error) {
	m, ok := r.byName[name]
	if !ok {
		return "", fmt.Errorf("models: no manifest for model %q", name)
	}
	if m.File == "" {
		return "", fmt.Errorf("models: model %s (%s) is not installed: it is an optional slot; install the model file and its manifest (with file and sha256) into %s", name, m.Task, filepath.Join(r.dir, "manifests"))
	}
	p := filepath.Join(r.dir, m.File)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("models: model %s: %s is missing (run `make setup`): %w", name, p, err)
	}
	return p, nil
}

// BatchPath is the batch-rewritten file of a model, when its manifest
// declares one and the file is present.
func (r *Repository) BatchPath(name string) (string, error) {
	m, ok := r.byName[name]
	if !ok {
		return "", fmt.Errorf("models: no manifest for model %q", name)
	}
	if m.BatchFile == "" {
		return "", fmt.Errorf("models: model %s has no batch rewrite", name)
	}
	p := filepath.Join(r.dir, m.BatchFile)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("models: model %s: batch rewrite %s is missing (run `make setup-models`): %w", name, p, err)
	}
	return p, nil
}

// Verify hashes every model file (cached by size and modification time)
// and returns the state of each, sorted by name.
func (r *Repository) Verify(ctx context.Context) []ModelState {
	out := make([]ModelState, 0, len(r.names))
	for _, n := range r.names {
		out = append(out, r.VerifyModel(ctx, n))
	}
	return out
}

// VerifyModel returns the state of one model.
func (r *Repository) VerifyModel(ctx context.Context, name string) ModelState {
	m, ok := r.byName[name]
	if !ok {
		return ModelState{Manifest: Manifest{Name: name}, State: StateMissing, Err: fmt.Errorf("models: no manifest for model %q", name), BatchState: StateNone}
	}
	st := ModelState{Manifest: m, BatchState: StateNone}
	if m.File == "" {
		st.State = StateNotInstalled
		st.Err = fmt.Errorf("models: model %s (%s) is an optional slot with no model installed", name, m.Task)
		return st
	}
	st.Path = filepath.Join(r.dir, m.File)
	st.State, st.Err = r.check(ctx, name, st.Path, m.SHA256)
	if st.State == StateMissing && m.Optional {
		st.State = StateNotInstalled
	}
	if m.BatchFile != "" {
		st.BatchPath = filepath.Join(r.dir, m.BatchFile)
		st.BatchState, _ = r.check(ctx, name, st.BatchPath, m.BatchSHA256)
	}
	return st
}

func (r *Repository) check(ctx context.Context, name, p, want string) (State, error) {
	if err := ctx.Err(); err != nil {
		return StateUnreadable, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return StateMissing, fmt.Errorf("models: model %s: %s is missing (run `make setup`)", name, p)
	}
	if err != nil {
		return StateUnreadable, fmt.Errorf("models: model %s: %w", name, err)
	}
	r.mu.Lock()
	e, ok := r.cache[p]
	r.mu.Unlock()
	sum := e.sum
	if !ok || e.size != fi.Size() || !e.mod.Equal(fi.ModTime()) {
		sum, err = fileSHA256(ctx, p)
		if err != nil {
			return StateUnreadable, fmt.Errorf("models: model %s: %w", name, err)
		}
		r.mu.Lock()
		r.cache[p] = hashEntry{size: fi.Size(), mod: fi.ModTime(), sum: sum}
		r.mu.Unlock()
	}
	if sum != want {
		return StateMismatch, fmt.Errorf("models: model %s: %s has SHA-256 %s, the manifest wants %s (corrupt or wrong file; run `make setup-models`)", name, p, sum, want)
	}
	return StateVerified, nil
}

// Require verifies the named models (every non-optional model when no name
// is given) and returns one error naming each model that is missing or
// corrupt: the startup check. An optional model named explicitly is
// required too. Hashes are cached, so a second call only stats the files.
func (r *Repository) Require(names ...string) error {
	ctx := context.Background()
	if len(names) == 0 {
		for _, n := range r.names {
			if !r.byName[n].Optional {
				names = append(names, n)
			}
		}
	}
	var errs []error
	for _, n := range names {
		st := r.VerifyModel(ctx, n)
		if !st.OK() {
			errs = append(errs, st.Err)
		}
	}
	return errors.Join(errs...)
}

// Install copies every model file (and batch rewrite) that is not yet
// verified from mirrorDir into the repository, verifying each hash before
// it is moved into place. Optional models absent from the mirror are
// skipped; everything else absent or corrupt is an error naming the model.
func (r *Repository) Install(ctx context.Context, mirrorDir string) error {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	var errs []error
	for _, n := range r.names {
		m := r.byName[n]
		if m.File == "" {
			continue
		}
		if err := r.installFile(ctx, mirrorDir, n, m.File, m.SHA256, m.Optional); err != nil {
			errs = append(errs, err)
		}
		if m.BatchFile != "" {
			// Batch rewrites come from scripts/rewrite_batch.py; a mirror
			// may carry them too. Absent ones only cost batching.
			_ = r.installFile(ctx, mirrorDir, n, m.BatchFile, m.BatchSHA256, true)
		}
	}
	return errors.Join(errs...)
}

func (r *Repository) installFile(ctx context.Context, mirrorDir, name, file, sum string, optional bool) error {
	dst := filepath.Join(r.dir, file)
	if st, _ := r.check(ctx, name, dst, sum); st == StateVerified {
		return nil
	}
	src := filepath.Join(mirrorDir, file)
	if mirrorDir == "" {
		if optional {
			return nil
		}
		return fmt.Errorf("models: model %s: %s is not installed and no mirror is set (FASHIOND_MODELS_MIRROR)", name, file)
	}
	if _, err := os.Stat(src); err != nil {
		if optional {
			return nil
		}
		return fmt.Errorf("models: model %s: %s not found in mirror %s", name, file, mirrorDir)
	}
	got, err := fileSHA256(ctx, src)
	if err != nil {
		return fmt.Errorf("models: model %s: %w", name, err)
	}
	if got != sum {
		return fmt.Errorf("models: model %s: mirror file %s has SHA-256 %s, the manifest wants %s", name, src, got, sum)
	}
	tmp := dst + ".tmp"
	if err := copyFile(ctx, src, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("models: model %s: %w", name, err)
	}
	if got, err := fileSHA256(ctx, tmp); err != nil || got != sum {
		os.Remove(tmp)
		return fmt.Errorf("models: model %s: copy to %s did not verify (%v)", name, tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("models: model %s: %w", name, err)
	}
	return nil
}

func fileSHA256(ctx context.Context, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxio.Reader(ctx, f)); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, ctxio.Reader(ctx, in)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SessionSpec is the inference spec of a model's original file.
func (r *Repository) SessionSpec(name string) (inference.SessionSpec, error) {
	m, ok := r.byName[name]
	if !ok {
		return inference.SessionSpec{}, fmt.Errorf("models: no manifest for model %q", name)
	}
	p, err := r.Path(name)
	if err != nil {
		return inference.SessionSpec{}, err
	}
	return inference.SessionSpec{Name: name, Path: p, Inputs: m.InputNames(), Outputs: m.OutputNames(), Device: m.Device}, nil
}

// RunnerOptions choose how NewRunner serves a model.
type RunnerOptions struct {
	// Batching enables the dynamic batcher for batchable models.
	Batching bool
	// PoolSize is the number of sessions for models that cannot batch
	// (default 2).
	PoolSize int
}

// ModelRunner serves one model: a Batcher over a batch-capable session, or
// a Pool of single-image sessions. Close is idempotent and nil-safe.
type ModelRunner struct {
	inference.Runner
	name    string
	mode    string
	device  string
	batcher *inference.Batcher
	session *inference.Session
	pool    *inference.Pool
	once    sync.Once
	err     error
}

// Mode is "batched" (dynamic batcher over the native or rewritten graph)
// or "pool" (concurrent single-image sessions).
func (m *ModelRunner) Mode() string { return m.mode }

// Device is the execution provider ("cpu" or "cuda").
func (m *ModelRunner) Device() string { return m.device }

// Stats are the batcher's statistics (zero for a pool).
func (m *ModelRunner) Stats() inference.BatchStats {
	if m == nil || m.batcher == nil {
		return inference.BatchStats{}
	}
	return m.batcher.Stats()
}

// Close releases the batcher and sessions.
func (m *ModelRunner) Close() error {
	if m == nil {
		return nil
	}
	m.once.Do(func() {
		m.err = errors.Join(m.batcher.Close(), m.session.Close(), m.pool.Close())
	})
	return m.err
}

// NewRunner verifies a model and opens it: batched when opt.Batching is set
// and the model batches natively or its verified batch rewrite is present,
// otherwise as a session pool.
func (r *Repository) NewRunner(ctx context.Context, rt *inference.Runtime, name string, opt RunnerOptions) (*ModelRunner, error) {
	st := r.VerifyModel(ctx, name)
	if !st.OK() {
		return nil, st.Err
	}
	spec, err := r.SessionSpec(name)
	if err != nil {
		return nil, err
	}
	m := st.Manifest
	if opt.Batching && m.MaxBatch > 1 {
		bspec := spec
		ok := m.BatchNative
		if !ok && m.BatchFile != "" && st.BatchState == StateVerified {
			bspec.Path, ok = st.BatchPath, true
		}
		if ok {
			s, err := rt.NewSession(ctx, bspec)
			if err != nil {
				return nil, err
			}
			b := inference.NewBatcher(s, m.BatchOptions())
			return &ModelRunner{Runner: b, name: name, mode: "batched", device: s.Device(), batcher: b, session: s}, nil
		}
	}
	size := opt.PoolSize
	if size <= 0 {
		size = 2
	}
	p, err := inference.NewPool(ctx, rt, spec, size)
	if err != nil {
		return nil, err
	}
	return &ModelRunner{Runner: p, name: name, mode: "pool", device: p.Device(), pool: p}, nil
}

// String describes the runner for logs.
func (m *ModelRunner) String() string {
	return strings.Join([]string{m.name, m.mode, m.device}, "/")
}
