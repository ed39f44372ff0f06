package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
)

// TestBenchFashn measures the small random-weight FASHN VTON export: every
// level reports its calls, and with batching four guided jobs share calls
// (fewer calls than unbatched, more rows per call).
func TestBenchFashn(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var w bytes.Buffer
	args := []string{"--folder", filepath.Join(pipelinetest.Root(), "diffusion/testdata/fashn/tiny"), "--steps", "3", "--jobs", "1,4",
		"--json", out, "--ort-lib", testenv.ORTLib(), "--device", "cpu"}
	if err := runBenchFashn(context.Background(), args, &w); err != nil {
		t.Fatalf("%v\n%s", err, w.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rs []fashnBenchResult
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 || !strings.Contains(w.String(), "S/IMAGE") {
		t.Fatalf("%d results\n%s", len(rs), w.String())
	}
	byKey := map[[2]int]fashnBenchResult{}
	for _, r := range rs {
		b := 0
		if r.Batching {
			b = 1
		}
		byKey[[2]int{r.Jobs, b}] = r
	}
	off, on := byKey[[2]int{4, 0}], byKey[[2]int{4, 1}]
	// 3 steps: 2 guided (2 rows) and 1 conditional (1 row) per job.
	if off.Rows != 4*5 || on.Rows != 4*5 || on.Calls >= off.Calls {
		t.Errorf("4 jobs: unbatched %d calls / %d rows, batched %d calls / %d rows", off.Calls, off.Rows, on.Calls, on.Rows)
	}
}
