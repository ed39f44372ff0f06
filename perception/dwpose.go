package perception

import (
	"fmt"
	"image"
	"math"
)

// DWPose (IDEA-Research, Apache-2.0) as FASHN VTON v1.5 uses it: a YOLOX-L
// person detector, the RTMPose-based whole-body model (133 COCO-WholeBody
// keypoints decoded from SimCC), its OpenPose-18 body with a neck, and the
// grayscale pose map FASHN VTON conditions on. This file is the pure-Go
// part: post-processing and drawing, no runtime. Facts from the reference
// code (github.com/fashn-AI/fashn-vton-1.5 at 7c0f10a, dwpose/) are checked
// by fixtures the reference functions wrote (diffusion/testdata/fashn).

// DWPose constants of the reference.
const (
	// dwVisible is KEYPOINT_VISIBILITY_THRESHOLD: a keypoint is drawn
	// above it.
	dwVisible = 0.3
	// dwBodyPoints is the OpenPose body (18 points, neck included);
	// dwWholePoints the COCO-WholeBody keypoints plus the neck.
	dwBodyPoints  = 18
	dwWholePoints = 134
	dwHandPoints  = 21
	dwFacePoints  = 68
	// drawEps is draw_pose's eps: hand and face points at pixel 0 are
	// not drawn.
	drawEps = 0.01
	// dwStick is the half-width of a limb ellipse, dwPointRadius the
	// radius of a body point, dwHandRadius a hand point's, dwFaceRadius
	// a face point's, dwHandLine the width of a hand's bones.
	dwStick       = 4
	dwPointRadius = 4
	dwHandRadius  = 4
	dwFaceRadius  = 3
	dwHandLine    = 2
	dwHandGray    = 240
	dwFaceGray    = 200
)

// PoseDict is DWposeDetector's output: the body (Candidate: normalised x,y
// of N×18 points; Subset: per person, the index of each of the 18 points in
// Candidate or -1), the hands (2N×21) and faces (N×68) with hidden points at
// -1. Nil Hands and Faces mean absent (the flat-lay dummy has neither).
type PoseDict struct {
	Candidate [][2]float64
	Subset    [][]float64
	Hands     [][][2]float64
	Faces     [][][2]float64
}

// DummyPose is get_dummy_dw_keypoints: no person (flat-lay garments).
func DummyPose() PoseDict {
	p := PoseDict{Candidate: make([][2]float64, dwBodyPoints), Subset: [][]float64{make([]float64, dwBodyPoints)}}
	for i := range p.Candidate {
		p.Candidate[i] = [2]float64{-1, -1}
		p.Subset[0][i] = -1
	}
	return p
}

// dwLimbs are draw_bodypose_gray's limbs (1-based OpenPose points).
var dwLimbs = [17][2]int{{2, 3}, {2, 6}, {3, 4}, {4, 5}, {6, 7}, {7, 8}, {2, 9}, {9, 10},
	{10, 11}, {2, 12}, {12, 13}, {13, 14}, {2, 1}, {1, 15}, {15, 17}, {1, 16}, {16, 18}}

// dwHandEdges are draw_handpose_gray's bones.
var dwHandEdges = [20][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 5}, {5, 6}, {6, 7}, {7, 8},
	{0, 9}, {9, 10}, {10, 11}, {11, 12}, {0, 13}, {13, 14}, {14, 15}, {15, 16}, {0, 17}, {17, 18}, {18, 19}, {19, 20}}

// linspaceU8 is np.linspace(a, b, n).astype(np.uint8).
func linspaceU8(a, b float64, n int) []uint8 {
	out := make([]uint8, n)
	step := (b - a) / float64(n-1)
	for i := range out {
		v := a + float64(i)*step
		if i == n-1 {
			v = b
		}
		out[i] = uint8(v)
	}
	return out
}

// floorDiv is Python's //.
func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// DrawPoseGray is draw_pose(pose, H, W, grayscale=True): limbs as filled
// ellipses at 60% of their grey level, then body points, hand bones and
// points, and face points, on black.
func DrawPoseGray(p PoseDict, w, h int) (*image.Gray, error) {
	if err := checkCanvasSize(w, h); err != nil {
		return nil, err
	}
	c := newGrayCanvas(w, h, 0)
	if err := drawBodyGray(c, p); err != nil {
		return nil, err
	}
	if p.Hands != nil {
		drawHandsGray(c, p.Hands)
	}
	if p.Faces != nil {
		for _, lm := range p.Faces {
			for _, q := range lm {
				x, y := int(q[0]*float64(w)), int(q[1]*float64(h))
				if float64(x) > drawEps && float64(y) > drawEps {
					c.circleFill(x, y, dwFaceRadius, dwFaceGray)
				}
			}
		}
	}
	return &image.Gray{Pix: c.pix, Stride: w, Rect: image.Rect(0, 0, w, h)}, nil
}

// point is the pixel of candidate index idx (int() truncation).
func (p PoseDict) point(idx, w, h int) (int, int, error) {
	if idx < 0 || idx >= len(p.Candidate) {
		return 0, 0, fmt.Errorf("pose map: subset index %d outside the %d candidates", idx, len(p.Candidate))
	}
	q := p.Candidate[idx]
	return int(q[0] * float64(w)), int(q[1] * float64(h)), nil
}

func drawBodyGray(c *grayCanvas, p PoseDict) error {
	base := linspaceU8(20, 240, dwBodyPoints)
	limbs := newGrayCanvas(c.w, c.h, 0)
	for i, l := range dwLimbs {
		for _, s := range p.Subset {
			if len(s) < dwBodyPoints {
				return fmt.Errorf("pose map: a subset row has %d points, want %d", len(s), dwBodyPoints)
			}
			a, b := int(s[l[0]-1]), int(s[l[1]-1])
			if a == -1 || b == -1 {
				continue
			}
			xa, ya, err := p.point(a, c.w, c.h)
			if err != nil {
				return err
			}
			xb, yb, err := p.point(b, c.w, c.h)
			if err != nil {
				return err
			}
			mx, my := floorDiv(xa+xb, 2), floorDiv(ya+yb, 2)
			length := int(math.Hypot(float64(xa-xb), float64(ya-yb)))
			angle := int(math.Atan2(float64(ya-yb), float64(xa-xb)) * (180.0 / math.Pi))
			poly := ellipse2Poly(int64(mx), int64(my), int64(length/2), dwStick, angle, 0, 360, 1)
			limbs.fillConvexPoly(poly, 0, base[i])
		}
	}
	for k, v := range limbs.pix {
		c.pix[k] = max(c.pix[k], uint8(float64(v)*0.6))
	}
	for i := 1; i <= dwBodyPoints; i++ {
		first := -1
		for li, l := range dwLimbs {
			if l[0] == i || l[1] == i {
				first = li
				break
			}
		}
		gray := uint8(200)
		if first >= 0 {
			gray = uint8(min(255, int(float64(base[first])*1.3)))
		}
		for _, s := range p.Subset {
			idx := int(s[i-1])
			if idx == -1 {
				continue
			}
			x, y, err := p.point(idx, c.w, c.h)
			if err != nil {
				return err
			}
			c.circleFill(x, y, dwPointRadius, gray)
		}
	}
	return nil
}

func drawHandsGray(c *grayCanvas, hands [][][2]float64) {
	vals := linspaceU8(160, 220, len(dwHandEdges))
	px := func(q [2]float64) (int, int) { return int(q[0] * float64(c.w)), int(q[1] * float64(c.h)) }
	for _, peaks := range hands {
		if len(peaks) < dwHandPoints {
			continue
		}
		for ie, e := range dwHandEdges {
			x1, y1 := px(peaks[e[0]])
			x2, y2 := px(peaks[e[1]])
			if float64(x1) > drawEps && float64(y1) > drawEps && float64(x2) > drawEps && float64(y2) > drawEps {
				c.thickLine(pt64{int64(x1), int64(y1)}, pt64{int64(x2), int64(y2)}, dwHandLine, vals[ie])
			}
		}
		for _, q := range peaks {
			x, y := px(q)
			if float64(x) > drawEps && float64(y) > drawEps {
				c.circleFill(x, y, dwHandRadius, dwHandGray)
			}
		}
	}
}
