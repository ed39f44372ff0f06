package imagetovideo

import (
	"context"
	"fmt"
	"image"
	"math"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/scene"
)

// TestFrameSamples: the sampled frame indices, first and last included.
func TestFrameSamples(t *testing.T) {
	cases := []struct {
		n    int
		want []int
	}{
		{96, []int{0, 23, 47, 71, 95}},
		{144, []int{0, 35, 71, 107, 143}},
		{3, []int{0, 1, 2}},
		{1, []int{0}},
	}
	for _, c := range cases {
		s := newFrameSamples(c.n)
		got := make([]int, len(s.frames))
		for i, slot := range s.at {
			got[slot] = i
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("n=%d: samples %v, want %v", c.n, got, c.want)
		}
	}
}

// renderSamples renders the sampled frames of a 6 s 24 fps clip of sc.
func renderSamples(t *testing.T, sc *scene.Scene, mv Move) []*image.RGBA {
	t.Helper()
	r, err := newRenderer(sc, mv, 720, 1280, classicalExtend)
	if err != nil {
		t.Fatal(err)
	}
	const n = 144
	s := newFrameSamples(n)
	buf := image.NewRGBA(image.Rect(0, 0, 720, 1280))
	for i := range s.at {
		r.render(buf, float64(i)/float64(n-1), float64(i)/24)
		s.keep(i, buf)
	}
	return s.frames
}

// TestVideoSelfCheck: on a real photo (a standing man,
// codait_man_standing.jpg) the rendered orbit passes the video checks;
// the same orbit over a background plate that still holds the man (the
// person was not removed, as when segmentation misses a person) shows him
// twice as the layers part, and the job fails naming the check and
// value. (The same plate under a pan left shows only a sliver of his head's
// edge and passes: the checks count people and area, not slivers.)
func TestVideoSelfCheck(t *testing.T) {
	perc := pipelinetest.Perception(t)
	ctx := context.Background()
	sc, err := scene.Layers(ctx, perc, pipelinetest.Image(t, "images/codait_man_standing.jpg"), scene.Options{WithDepth: true})
	if err != nil {
		t.Fatal(err)
	}
	p := New(perc, Options{})
	for _, c := range []struct {
		mv   Move
		jump float64
	}{{Orbit, 0.0172}, {PanLeft, 0.0082}} {
		checks, err := p.checkFrames(ctx, renderSamples(t, sc, c.mv))
		if err != nil || len(checks) != 2 || checks[0].Value != 0 || math.Abs(checks[1].Value-c.jump) > 0.005 {
			t.Errorf("%s clean: checks %+v err %v; want count change 0, area jump %v±0.005", c.mv, checks, err, c.jump)
		}
	}
	// The orbit moves the man's layer a fifth of his width off the plate's
	// copy by the last second: two heads, two torsos (looked at).
	ghosted := *sc
	ghosted.Background = sc.Image
	frames := renderSamples(t, &ghosted, Orbit)
	dump(t, "ghost_orbit_last.png", frames[len(frames)-1])
	checks, err := p.checkFrames(ctx, frames)
	const want = "image-to-video: self-check video_person_count_change failed: 1 above the limit 0"
	if err == nil || err.Error() != want || len(checks) != 2 || math.Abs(checks[1].Value-0.2069) > 0.005 {
		t.Errorf("ghosted orbit: checks %+v err %v; want %q and area jump 0.2069±0.005", checks, err, want)
	}
}
