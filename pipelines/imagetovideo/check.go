package imagetovideo

import (
	"context"
	"image"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/selfcheck"
	"fashiond/spec"
)

// checkSamples is how many frames, evenly spaced from the first to the
// last, the video self-checks measure (each costs one person mask and one
// face detection).
const checkSamples = 5

// frameSamples keeps copies of the frames the self-checks measure.
type frameSamples struct {
	at     map[int]int // frame index -> sample slot
	frames []*image.RGBA
}

// newFrameSamples picks checkSamples frame indices of n (fewer when n is
// smaller), evenly spaced and including the first and the last.
func newFrameSamples(n int) *frameSamples {
	s := &frameSamples{at: map[int]int{}}
	k := min(checkSamples, n)
	for j := 0; j < k; j++ {
		i := 0
		if k > 1 {
			i = j * (n - 1) / (k - 1)
		}
		if _, ok := s.at[i]; !ok {
			s.at[i] = len(s.frames)
			s.frames = append(s.frames, nil)
		}
	}
	return s
}

// keep copies frame i when it is a sample.
func (s *frameSamples) keep(i int, img *image.RGBA) {
	slot, ok := s.at[i]
	if !ok {
		return
	}
	c := image.NewRGBA(img.Rect)
	copy(c.Pix, img.Pix)
	s.frames[slot] = c
}

// checkFrames measures the video self-checks on the sampled frames and
// returns them, or the job's error naming the first failed check.
func (p *Pipeline) checkFrames(ctx context.Context, frames []*image.RGBA) ([]pipelines.Check, error) {
	var vfs []selfcheck.VideoFrame
	for _, f := range frames {
		if f == nil {
			continue
		}
		vf, err := selfcheck.MeasureVideoFrame(ctx, p.p, f)
		if err != nil {
			return nil, err
		}
		vfs = append(vfs, vf)
	}
	if len(vfs) == 0 {
		return nil, nil
	}
	checks := selfcheck.VideoChecks(vfs)
	if err := pipelines.CheckError(spec.ModelImageToVideo, checks); err != nil {
		return checks, err
	}
	return checks, nil
}
