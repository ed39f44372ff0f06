package tryon

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
)

// TestTryonCrowdStaysOnSubject: the red tee on the crowded photos (a man
// behind the subject, a man seated against him, two astronauts
// overlapping) changes at most maxNeighbour of the neighbour's visible
// pixels, and the job's checks pass.
func TestTryonCrowdStaysOnSubject(t *testing.T) {
	const maxNeighbour = 0.005
	dir := t.TempDir()
	for _, c := range pipelinetest.Crowds(t) {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(dir, c.Name+".png")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := png.Encode(f, c.Img); err != nil {
				t.Fatal(err)
			}
			f.Close()
			res, err := run(t, Inputs{PersonImage: path, GarmentImage: "file:garments/flatlay_tee_red.png", Accuracy: "standard", SampleCount: 1})
			if err != nil {
				t.Fatal(err)
			}
			out := res.Outputs[0]
			testenv.WritePNG(t, "tryon_crowd_"+c.Name+".png", out.Image)
			share := pipelinetest.ChangedShare(c.Img, out.Image, c.Neighbour)
			t.Logf("%s: %.4f of the neighbour changed; checks %+v", c.Name, share, out.Checks)
			if share > maxNeighbour {
				t.Errorf("%.4f of the neighbour's pixels changed, want <= %.3f", share, maxNeighbour)
			}
			for _, ch := range out.Checks {
				if !ch.Pass {
					t.Errorf("check %s failed: %+v", ch.Name, ch)
				}
			}
		})
	}
}
