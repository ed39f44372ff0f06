package perception

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"fashiond/inference"
	"fashiond/internal/testenv"
)

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// tinyRepo makes a repository directory whose operator manifests declare
// small models: "good" (present, right hash), "bad" (present, wrong
// bytes), "gone" (absent), "maybe" (optional, absent).
func tinyRepo(t *testing.T) (dir string, content map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	content = map[string][]byte{
		"good": []byte("good model bytes"),
		"bad":  []byte("bad model bytes"),
		"gone": []byte("gone model bytes"),
	}
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, optional bool, data []byte) {
		m := fmt.Sprintf(`{"name":%q,"file":%q,"sha256":%q,"task":"test","optional":%v,
		"inputs":[{"name":"x","dtype":"float32","shape":[1,3]}],"outputs":[{"name":"y","dtype":"float32","shape":[1,3]}]}`,
			name, name+".onnx", sha(data), optional)
		if err := os.WriteFile(filepath.Join(dir, "manifests", name+".json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good", false, content["good"])
	write("bad", false, content["bad"])
	write("gone", false, content["gone"])
	write("maybe", true, []byte("maybe"))
	if err := os.WriteFile(filepath.Join(dir, "good.onnx"), content["good"], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.onnx"), []byte("corrupted!"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, content
}

func TestRepositoryStates(t *testing.T) {
	dir, content := tinyRepo(t)
	repo, err := OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]State{
		"good":            StateVerified,
		"bad":             StateMismatch,
		"gone":            StateMissing,
		"maybe":           StateNotInstalled,
		"blazepose_full":  StateMissing, // committed manifests, files not in this dir
		"tryon-diffusion": StateNotInstalled,
	}
	states := repo.Verify(ctx)
	if len(states) != len(repo.Names()) {
		t.Fatalf("%d states for %d models", len(states), len(repo.Names()))
	}
	for _, st := range states {
		w, ok := want[st.Manifest.Name]
		if !ok {
			continue
		}
		if st.State != w {
			t.Errorf("%s: state %q, want %q (%v)", st.Manifest.Name, st.State, w, st.Err)
		}
		if (st.State == StateVerified) != (st.Err == nil) {
			t.Errorf("%s: state %q with error %v", st.Manifest.Name, st.State, st.Err)
		}
	}
	if st := repo.VerifyModel(ctx, "bad"); !strings.Contains(st.Err.Error(), "bad") || !strings.Contains(st.Err.Error(), sha(content["bad"])) {
		t.Errorf("mismatch error should name the model and the wanted hash: %v", st.Err)
	}

	// Path checks presence; errors name the model and the fix.
	if p, err := repo.Path("good"); err != nil || p != filepath.Join(dir, "good.onnx") {
		t.Errorf("Path(good) = %q, %v", p, err)
	}
	for name, wantErr := range map[string]string{
		"gone":            "model gone: " + filepath.Join(dir, "gone.onnx") + " is missing (run `make setup`)",
		"nosuch":          `no manifest for model "nosuch"`,
		"tryon-diffusion": "is not installed: it is an optional slot",
	} {
		if _, err := repo.Path(name); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Path(%s) error %v, want %q", name, err, wantErr)
		}
	}

	// Require names every broken model, and only those.
	err = repo.Require("good", "bad", "gone")
	if err == nil {
		t.Fatal("Require passed with a corrupt and a missing model")
	}
	for _, name := range []string{"model bad", "model gone"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Require error lacks %q: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "model good") {
		t.Errorf("Require blames a verified model: %v", err)
	}
	if err := repo.Require("good"); err != nil {
		t.Errorf("Require(good): %v", err)
	}
	if err := repo.Require(); err == nil || !strings.Contains(err.Error(), "blazepose_full") || strings.Contains(err.Error(), "tcmonodepth_small") {
		t.Errorf("Require() should name missing required models and skip optional ones: %v", err)
	}

	// Repairing the file changes the state (the hash cache sees the change).
	if err := os.WriteFile(filepath.Join(dir, "bad.onnx"), content["bad"], 0o644); err != nil {
		t.Fatal(err)
	}
	if st := repo.VerifyModel(ctx, "bad"); st.State != StateVerified {
		t.Errorf("after repair: %q %v", st.State, st.Err)
	}

	// A cancelled context stops hashing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if st := repo.VerifyModel(cctx, "good"); st.OK() || !errors.Is(st.Err, context.Canceled) {
		t.Errorf("cancelled verify: %q %v", st.State, st.Err)
	}
}

func TestRepositoryInstall(t *testing.T) {
	dir, content := tinyRepo(t)
	mirror := t.TempDir()
	os.WriteFile(filepath.Join(mirror, "gone.onnx"), content["gone"], 0o644)
	os.WriteFile(filepath.Join(mirror, "bad.onnx"), []byte("still corrupted"), 0o644)
	repo, err := OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = repo.Install(context.Background(), mirror)
	if err == nil {
		t.Fatal("Install passed although the mirror lacks models and holds a corrupt one")
	}
	if !strings.Contains(err.Error(), "model bad: mirror file") || !strings.Contains(err.Error(), "model blazepose_full:") {
		t.Errorf("Install error should name the corrupt and the absent model: %v", err)
	}
	if strings.Contains(err.Error(), "maybe") || strings.Contains(err.Error(), "tryon-diffusion") {
		t.Errorf("Install complains about optional models: %v", err)
	}
	ctx := context.Background()
	if st := repo.VerifyModel(ctx, "gone"); st.State != StateVerified {
		t.Errorf("gone after install: %q %v", st.State, st.Err)
	}
	if st := repo.VerifyModel(ctx, "bad"); st.State != StateMismatch {
		t.Errorf("bad must stay a mismatch (corrupt mirror copy refused): %q", st.State)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.onnx.tmp")); !os.IsNotExist(err) {
		t.Error("temporary file left behind")
	}
}

func TestOpenRepositoryRejectsBadOperatorManifest(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "manifests"), 0o755)
	os.WriteFile(filepath.Join(dir, "manifests", "x.json"), []byte(`{"name":"y","task":"t","optional":true}`), 0o644)
	if _, err := OpenRepository(dir); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Fatalf("mis-named operator manifest: %v", err)
	}
	if _, err := OpenRepository(""); err == nil {
		t.Fatal("empty dir accepted")
	}
}

// realRepo is the installed repository (make setup-models).
func realRepo(t *testing.T) *Repository {
	t.Helper()
	dir := testenv.ModelsDir()
	repo, err := OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func realRuntime(t *testing.T) *inference.Runtime {
	t.Helper()
	lib := testenv.ORTLib()
	rt, err := inference.Open(context.Background(), inference.Config{LibPath: lib, IntraOpThreads: 2, Device: "auto"}, nil)
	if err != nil {
		t.Fatalf("%v (run make setup)", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestInstalledRepositoryVerifies(t *testing.T) {
	repo := realRepo(t)
	if err := repo.Require(); err != nil {
		t.Fatalf("installed repository: %v (run make setup)", err)
	}
	for _, st := range repo.Verify(context.Background()) {
		if st.Manifest.BatchFile != "" && st.BatchState != StateVerified {
			t.Errorf("%s: batch rewrite %s is %q (run make setup-models)", st.Manifest.Name, st.Manifest.BatchFile, st.BatchState)
		}
	}
}

func TestNewRunner(t *testing.T) {
	repo := realRepo(t)
	rt := realRuntime(t)
	ctx := context.Background()
	cases := []struct {
		name     string
		batching bool
		mode     string
	}{
		{"selfie_segmentation", true, "batched"},
		{"selfie_segmentation", false, "pool"},
		{"yunet", true, "pool"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v", c.name, c.batching), func(t *testing.T) {
			r, err := repo.NewRunner(ctx, rt, c.name, RunnerOptions{Batching: c.batching, PoolSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Mode() != c.mode || r.Device() != "cpu" {
				t.Fatalf("mode %q device %q, want %q on cpu", r.Mode(), r.Device(), c.mode)
			}
			if c.name != "selfie_segmentation" {
				return
			}
			// Three concurrent jobs on a bright square in a dark frame.
			var wg sync.WaitGroup
			outs := make([][]inference.Tensor, 3)
			errs := make([]error, 3)
			for i := range outs {
				in := inference.Tensor{Shape: []int64{1, 256, 256, 3}, Data: make([]float32, 256*256*3)}
				for y := 64 + 8*i; y < 192; y++ {
					for x := 96; x < 160; x++ {
						for ch := range 3 {
							in.Data[(y*256+x)*3+ch] = 0.8
						}
					}
				}
				wg.Go(func() { outs[i], errs[i] = r.Run(ctx, []inference.Tensor{in}) })
			}
			wg.Wait()
			for i := range outs {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if !slices.Equal(outs[i][0].Shape, []int64{1, 256, 256, 1}) {
					t.Fatalf("shape %v", outs[i][0].Shape)
				}
			}
			if c.mode == "batched" && r.Stats().Calls != 3 {
				t.Fatalf("stats %+v", r.Stats())
			}
		})
	}
	// A model whose file is missing cannot be opened; the error names it.
	dir, _ := tinyRepo(t)
	tiny, _ := OpenRepository(dir)
	if _, err := tiny.NewRunner(ctx, rt, "gone", RunnerOptions{}); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("NewRunner(gone): %v", err)
	}
	var nilRunner *ModelRunner
	if err := nilRunner.Close(); err != nil {
		t.Fatal(err)
	}
}
