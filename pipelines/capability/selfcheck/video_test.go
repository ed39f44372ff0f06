package selfcheck

import (
	"context"
	"image"
	"math"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/raster"
)

// TestVideoChecksTable: the two video checks on measured frame sequences.
func TestVideoChecksTable(t *testing.T) {
	vf := func(people int, area float64) VideoFrame { return VideoFrame{People: people, Area: area} }
	cases := []struct {
		name            string
		frames          []VideoFrame
		count, jump     float64
		countOK, jumpOK bool
	}{
		{"steady push-in", []VideoFrame{vf(1, 0.20), vf(1, 0.21), vf(1, 0.22), vf(1, 0.24), vf(1, 0.25)}, 0, 0.0833, true, true},
		{"second person appears", []VideoFrame{vf(1, 0.20), vf(1, 0.20), vf(2, 0.22), vf(2, 0.22), vf(2, 0.22)}, 1, 0.0909, false, true},
		{"subject doubles in area", []VideoFrame{vf(1, 0.20), vf(1, 0.20), vf(1, 0.36), vf(1, 0.36), vf(1, 0.36)}, 0, 0.4444, true, false},
		{"person vanishes", []VideoFrame{vf(2, 0.30), vf(2, 0.30), vf(0, 0), vf(2, 0.30), vf(2, 0.30)}, 2, 1, false, false},
		{"small people: noise under the floor", []VideoFrame{vf(2, 0.041), vf(2, 0.033), vf(2, 0.046)}, 0, 0.13, true, true},
		{"small person doubled", []VideoFrame{vf(1, 0.04), vf(1, 0.04), vf(1, 0.08)}, 0, 0.4, true, false},
		{"no person at all", []VideoFrame{vf(0, 0), vf(0, 0)}, 0, 0, true, true},
		{"one frame", []VideoFrame{vf(1, 0.2)}, 0, 0, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := VideoChecks(c.frames)
			if len(got) != 2 || got[0].Name != NameVideoPersonCount || got[1].Name != NameVideoAreaJump {
				t.Fatalf("checks %+v", got)
			}
			if got[0].Value != c.count || got[0].Pass != c.countOK || got[1].Value != c.jump || got[1].Pass != c.jumpOK {
				t.Errorf("got %+v, want count %v (pass %v) jump %v (pass %v)", got, c.count, c.countOK, c.jump, c.jumpOK)
			}
		})
	}
}

// zoomFrame is img's centre crop of share k of its size, scaled back to
// w x h: a frame of a push-in.
func zoomFrame(img *image.RGBA, k float64, w, h int) *image.RGBA {
	b := img.Rect
	cw, ch := int(float64(b.Dx())*k), int(float64(b.Dy())*k)
	x0, y0 := (b.Dx()-cw)/2, (b.Dy()-ch)/2
	return raster.Resize(img.SubImage(image.Rect(x0, y0, x0+cw, y0+ch)), w, h)
}

// ghost pastes the pixels of frame where m (the person mask) is set,
// shifted by dx, over a copy of frame: the subject duplicated beside
// itself, as a camera move over a plate that kept the person does.
func ghost(frame *image.RGBA, m *image.Gray, dx int) *image.RGBA {
	out := raster.CopyRGBA(frame)
	w, h := frame.Rect.Dx(), frame.Rect.Dy()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if m.Pix[y*m.Stride+x] < 128 || x+dx < 0 || x+dx >= w {
				continue
			}
			copy(out.Pix[y*out.Stride+(x+dx)*4:][:4], frame.Pix[y*frame.Stride+x*4:][:4])
		}
	}
	return out
}

// TestVideoChecksOnFrames builds frame sequences from a real photo (a
// standing man, codait_man_standing.jpg) and measures them with the
// perception models: a clean push-in passes; the same push-in where a
// copy of the man appears beside him from the third frame on (a second
// head and torso, overlapping him or apart) fails.
func TestVideoChecksOnFrames(t *testing.T) {
	perc := pipelinetest.Perception(t)
	ctx := context.Background()
	src := raster.RGBA(pipelinetest.Image(t, "images/codait_man_standing.jpg"))
	const w, h = 413, 684
	zooms := []float64{1, 0.97, 0.94, 0.91, 0.88}
	cases := []struct {
		name        string
		shift       float64 // ghost offset as a share of the frame width; 0: none
		count, jump float64
		pass        bool
	}{
		{"clean push-in", 0, 0, 0.0575, true},
		{"overlapping second man", 0.18, 1, 0.3605, false},
		{"second man apart", 0.32, 1, 0.3747, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var vfs []VideoFrame
			for i, k := range zooms {
				f := zoomFrame(src, k, w, h)
				if c.shift != 0 && i >= 2 {
					m, err := perc.PersonMask(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					f = ghost(f, m, int(c.shift*w))
				}
				vf, err := MeasureVideoFrame(ctx, perc, f)
				if err != nil {
					t.Fatal(err)
				}
				vfs = append(vfs, vf)
			}
			got := VideoChecks(vfs)
			t.Logf("frames %+v checks %+v", vfs, got)
			pass := got[0].Pass && got[1].Pass
			if got[0].Value != c.count || math.Abs(got[1].Value-c.jump) > 0.02 || pass != c.pass {
				t.Errorf("count change %v, area jump %v, pass %v; want %v, %v±0.02, %v", got[0].Value, got[1].Value, pass, c.count, c.jump, c.pass)
			}
		})
	}
}
