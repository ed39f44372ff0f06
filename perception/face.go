package perception

import (
	"context"
	"fmt"
	"image"
	"math"
	"sort"

	"fashiond/inference"
)

// Face detector model names.
const (
	ModelYuNet     = "yunet"
	ModelUltraFace = "ultraface_rfb320"
)

var yunetOutputs = []string{
	"cls_8", "cls_16", "cls_32",
	"obj_8", "obj_16", "obj_32",
	"bbox_8", "bbox_16", "bbox_32",
	"kps_8", "kps_16", "kps_32",
}

// Face detection settings.
const (
	faceMaxSide      = 640  // longer side the detector sees
	yunetScoreThresh = 0.6  // sqrt(cls*obj)
	ultraScoreThresh = 0.7  // face column of the softmax
	faceNMSIoU       = 0.3  // suppression overlap
	faceMinSide      = 32.0 // smallest input side (tiny images are upscaled)
)

type yunetInput struct {
	tensor inference.Tensor
	scale  float64 // detector pixels per original pixel
	pw, ph int     // padded size
}

func prepareYuNet(img image.Image) yunetInput {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	scale := math.Min(1, float64(faceMaxSide)/float64(max(w, h)))
	if float64(min(w, h))*scale < faceMinSide {
		scale = faceMinSide / float64(min(w, h))
	}
	rw := max(1, int(math.Round(float64(w)*scale)))
	rh := max(1, int(math.Round(float64(h)*scale)))
	pw, ph := (rw+31)/32*32, (rh+31)/32*32
	canvas := padCanvas(resizeLinear(img, rw, rh), pw, ph, 0, 0)
	t := inference.Tensor{Shape: []int64{1, 3, int64(ph), int64(pw)}, Data: make([]float32, 3*pw*ph)}
	packNCHW(t.Data, canvas, [3]int{2, 1, 0}, [3]float32{1, 1, 1}, [3]float32{})
	// Scale back with the exact per-axis factor.
	return yunetInput{tensor: t, scale: float64(rw) / float64(w), pw: pw, ph: ph}
}

func clip01(v float32) float64 { return math.Min(1, math.Max(0, float64(v))) }

// decodeYuNet follows MODELS.md: per stride s, anchors row-major over the
// (H/s) x (W/s) grid; score sqrt(cls*obj); box centre (col+dx, row+dy)*s,
// size exp(dw)*s; landmarks (col+kx, row+ky)*s.
func decodeYuNet(in yunetInput, out []inference.Tensor, thresh float64) ([]Face, error) {
	if len(out) != 12 {
		return nil, fmt.Errorf("faces: yunet returned %d outputs, want 12", len(out))
	}
	var faces []Face
	for si, s := range []int{8, 16, 32} {
		cols, rows := in.pw/s, in.ph/s
		n := cols * rows
		cls, obj, bb, kp := out[si].Data, out[3+si].Data, out[6+si].Data, out[9+si].Data
		if len(cls) < n || len(obj) < n || len(bb) < 4*n || len(kp) < 10*n {
			return nil, fmt.Errorf("faces: yunet stride %d outputs too short for %d anchors", s, n)
		}
		fs := float64(s)
		for i := 0; i < n; i++ {
			score := math.Sqrt(clip01(cls[i]) * clip01(obj[i]))
			if score < thresh {
				continue
			}
			row, col := float64(i/cols), float64(i%cols)
			cx := (col + float64(bb[4*i])) * fs
			cy := (row + float64(bb[4*i+1])) * fs
			bw := math.Exp(float64(bb[4*i+2])) * fs
			bh := math.Exp(float64(bb[4*i+3])) * fs
			f := Face{Score: score, Source: ModelYuNet}
			f.Box = [4]float64{(cx - bw/2) / in.scale, (cy - bh/2) / in.scale, (cx + bw/2) / in.scale, (cy + bh/2) / in.scale}
			for j := 0; j < 5; j++ {
				f.Landmarks[j] = Point{
					X: (col + float64(kp[10*i+2*j])) * fs / in.scale,
					Y: (row + float64(kp[10*i+2*j+1])) * fs / in.scale,
				}
			}
			faces = append(faces, f)
		}
	}
	return faces, nil
}

func prepareUltraFace(img image.Image) inference.Tensor {
	t := inference.Tensor{Shape: []int64{1, 3, 240, 320}, Data: make([]float32, 3*240*320)}
	s := float32(1.0 / 128)
	packNCHW(t.Data, resizeLinear(img, 320, 240), [3]int{0, 1, 2}, [3]float32{s, s, s}, [3]float32{-127 * s, -127 * s, -127 * s})
	return t
}

func decodeUltraFace(out []inference.Tensor, w, h int, thresh float64) ([]Face, error) {
	if len(out) != 2 || len(out[0].Data)%2 != 0 || len(out[1].Data) != 2*len(out[0].Data) {
		return nil, fmt.Errorf("faces: unexpected ultraface outputs")
	}
	n := len(out[0].Data) / 2
	var faces []Face
	for i := 0; i < n; i++ {
		score := float64(out[0].Data[2*i+1])
		if score < thresh {
			continue
		}
		b := out[1].Data[4*i : 4*i+4]
		f := Face{Score: score, Source: ModelUltraFace, LandmarksEstimated: true}
		f.Box = [4]float64{
			math.Max(0, float64(b[0])*float64(w)), math.Max(0, float64(b[1])*float64(h)),
			math.Min(float64(w), float64(b[2])*float64(w)), math.Min(float64(h), float64(b[3])*float64(h)),
		}
		f.Landmarks = estimateLandmarks(f.Box)
		faces = append(faces, f)
	}
	return faces, nil
}

// estimateLandmarks places the five landmarks at the average positions of a
// frontal face in its box (eyes at 38% height, nose 58%, mouth 78%). Used
// only for the UltraFace fallback, which has no landmark head; such faces
// carry LandmarksEstimated.
func estimateLandmarks(b [4]float64) [5]Point {
	w, h := b[2]-b[0], b[3]-b[1]
	at := func(fx, fy float64) Point { return Point{X: b[0] + fx*w, Y: b[1] + fy*h} }
	return [5]Point{at(0.32, 0.38), at(0.68, 0.38), at(0.5, 0.58), at(0.36, 0.78), at(0.64, 0.78)}
}

func iou(a, b [4]float64) float64 {
	ix := math.Min(a[2], b[2]) - math.Max(a[0], b[0])
	iy := math.Min(a[3], b[3]) - math.Max(a[1], b[1])
	if ix <= 0 || iy <= 0 {
		return 0
	}
	inter := ix * iy
	u := (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter
	return inter / u
}

// nms keeps the best faces, best first.
func nms(faces []Face, thresh float64) []Face {
	sort.SliceStable(faces, func(i, j int) bool { return faces[i].Score > faces[j].Score })
	var keep []Face
	for _, f := range faces {
		ok := true
		for _, k := range keep {
			if iou(f.Box, k.Box) > thresh {
				ok = false
				break
			}
		}
		if ok {
			keep = append(keep, f)
		}
	}
	return keep
}

// Faces detects faces with YuNet (landmarks from the model); when YuNet finds
// none, UltraFace RFB-320 runs as a fallback and its faces carry estimated
// landmarks (LandmarksEstimated). Best first; boxes in image pixels.
func (s *Suite) Faces(ctx context.Context, img image.Image) ([]Face, error) {
	if err := checkImage(img); err != nil {
		return nil, fmt.Errorf("faces: %w", err)
	}
	b := img.Bounds()
	yn, err := s.model(ctx, ModelYuNet)
	if err != nil {
		return nil, err
	}
	in := prepareYuNet(img)
	out, err := yn.Run(ctx, []inference.Tensor{in.tensor})
	if err != nil {
		return nil, err
	}
	faces, err := decodeYuNet(in, out, yunetScoreThresh)
	if err != nil {
		return nil, err
	}
	if len(faces) == 0 {
		uf, err := s.model(ctx, ModelUltraFace)
		if err != nil {
			return nil, err
		}
		out, err := uf.Run(ctx, []inference.Tensor{prepareUltraFace(img)})
		if err != nil {
			return nil, err
		}
		if faces, err = decodeUltraFace(out, b.Dx(), b.Dy(), ultraScoreThresh); err != nil {
			return nil, err
		}
	}
	faces = nms(faces, faceNMSIoU)
	for i := range faces {
		f := &faces[i]
		f.Box[0] = math.Max(0, f.Box[0]) + float64(b.Min.X)
		f.Box[1] = math.Max(0, f.Box[1]) + float64(b.Min.Y)
		f.Box[2] = math.Min(float64(b.Dx()), f.Box[2]) + float64(b.Min.X)
		f.Box[3] = math.Min(float64(b.Dy()), f.Box[3]) + float64(b.Min.Y)
		for j := range f.Landmarks {
			f.Landmarks[j].X += float64(b.Min.X)
			f.Landmarks[j].Y += float64(b.Min.Y)
		}
	}
	return faces, nil
}
