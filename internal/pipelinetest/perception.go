package pipelinetest

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"testing"

	"fashiond/inference"
	"fashiond/internal/testenv"
	"fashiond/perception"
)

var (
	percOnce  sync.Once
	percSuite *perception.Suite
	percErr   error
)

// Perception returns the real perception models (perception.Suite), shared by
// every test in the process and never closed (the process exit releases
// them). The ONNX Runtime library comes from FASHIOND_ORT_LIB or
// <root>/.deps/onnxruntime/1.30.0/libonnxruntime.so.1, the models from
// FASHIOND_MODELS_DIR or <root>/data/models, on the CPU with batching off
// and the "lanczos" upscale policy (fast, deterministic tiers; tests that
// need super-resolution call SuperResolve). The test fails with a clear
// message when the runtime or the models are missing.
func Perception(t testing.TB) perception.Perception {
	t.Helper()
	percOnce.Do(func() {
		lib, dir := testenv.ORTLib(), testenv.ModelsDir()
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		rt, err := inference.Open(ctx, inference.Config{LibPath: lib, IntraOpThreads: min(2, runtime.NumCPU()), Device: "cpu"}, log)
		if err != nil {
			percErr = err
			return
		}
		percSuite, percErr = perception.NewSuite(ctx, rt, dir, perception.SuiteOptions{UpscalePolicy: perception.PolicyLanczos, Log: log})
	})
	if percErr != nil {
		t.Fatalf("pipelinetest: perception models unavailable: %v (run `make setup`, or set FASHIOND_ORT_LIB and FASHIOND_MODELS_DIR)", percErr)
	}
	return percSuite
}
