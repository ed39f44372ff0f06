package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fashiond/internal/testenv"
)

// TestBenchCommand runs two cheap stages in both batching modes and checks
// the JSON and the chart.
func TestBenchCommand(t *testing.T) {
	root, _ := filepath.Abs("../..")
	t.Setenv("FASHIOND_ORT_LIB", testenv.ORTLib())
	t.Setenv("FASHIOND_MODELS_DIR", testenv.ModelsDir())
	td := os.Getenv("FASHIOND_TESTDATA")
	if td == "" {
		td = filepath.Join(root, "..", "shared", "testdata")
	}
	dir := t.TempDir()
	js, chart := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.png")
	args := []string{"--stages", "selfie,upscale-1k-4k-lanczos", "--iters", "4", "--warmup", "1", "--concurrency", "2",
		"--batching", "both", "--testdata", td, "--intra-op-threads", "2", "--device", "cpu", "--json", js, "--chart", chart}
	if err := cmdBench(args); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Stages []struct {
			Stage          string   `json:"stage"`
			P50            float64  `json:"p50_ms"`
			P95            float64  `json:"p95_ms"`
			Throughput     float64  `json:"throughput_per_s"`
			BatchedSpeedup *float64 `json:"batched_speedup"`
			Runs           []any    `json:"runs"`
		} `json:"stages"`
		RSSAll float64 `json:"rss_all_models_mb"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Stages) != 2 {
		t.Fatalf("%d stages in %s", len(rep.Stages), b)
	}
	for _, s := range rep.Stages {
		if s.P50 <= 0 || s.P95 < s.P50 || s.Throughput <= 0 || len(s.Runs) != 2 {
			t.Errorf("stage %+v", s)
		}
	}
	if rep.Stages[0].BatchedSpeedup == nil || *rep.Stages[0].BatchedSpeedup <= 0 {
		t.Error("selfie has no batched_speedup")
	}
	if rep.Stages[1].BatchedSpeedup != nil {
		t.Error("Lanczos upscale reports a batched_speedup")
	}
	if rep.RSSAll < 100 {
		t.Errorf("RSS with all models %.0f MB", rep.RSSAll)
	}
	f, err := os.Open(chart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 100 {
		t.Errorf("chart %v", b)
	}
	if err := cmdBench([]string{"--batching", "sometimes"}); err == nil {
		t.Error("bad --batching accepted")
	}
	if err := cmdBench([]string{"--stages", "nosuch", "--testdata", td, "--iters", "1"}); err == nil {
		t.Error("unknown stage accepted")
	}
}
