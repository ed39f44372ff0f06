package perception

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"path/filepath"

	"fashiond/inference"
)

// The DWPose files as the authors publish them (huggingface.co/fashn-ai/
// DWPose, the same files as yzd-v/DWPose; Apache-2.0). They are not
// downloaded by fashiond: an operator installs them (InstallDWPose).
const (
	DWPoseDir      = "dwpose"
	FileYOLOX      = "yolox_l.onnx"
	FileDWPose     = "dw-ll_ucoco_384.onnx"
	dwPoseInW      = 288
	dwPoseInH      = 384
	dwRecordFile   = "fashiond-dwpose.json"
	bgrChannels    = 3
	maxDWPoseSide  = 8192
	dwPoseChannels = 3
)

// dwMean and dwStd normalise the pose model's input (applied to the BGR
// planes in that order, as the reference does).
var (
	dwMean = [3]float32{123.675, 116.28, 103.53}
	dwStd  = [3]float32{58.395, 57.12, 57.375}
)

// DWPose runs the two DWPose graphs. Safe for concurrent use; Close
// releases it.
type DWPose struct {
	det, pose      *inference.Session
	detIn, poseIn  string
	detOut         string
	poseX, poseY   string
	simccX, simccY int
}

// LoadDWPose loads dir/yolox_l.onnx and dir/dw-ll_ucoco_384.onnx and checks
// their tensors: detector [1,3,640,640] → [1,8400,85]; pose model
// [1,3,384,288] → SimCC x [1,133,576] and y [1,133,768].
func LoadDWPose(ctx context.Context, rt *inference.Runtime, dir, device string) (*DWPose, error) {
	d := &DWPose{}
	var err error
	if d.det, d.detIn, d.detOut, err = loadDetector(ctx, rt, dir, device); err != nil {
		return nil, err
	}
	if err := d.loadPose(ctx, rt, dir, device); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func loadDetector(ctx context.Context, rt *inference.Runtime, dir, device string) (*inference.Session, string, string, error) {
	path := filepath.Join(dir, FileYOLOX)
	ins, outs, err := rt.Inspect(ctx, path)
	if err != nil {
		return nil, "", "", fmt.Errorf("dwpose: %s: %w", FileYOLOX, err)
	}
	if len(ins) != 1 || !dimsFit(ins[0].Dims, 1, 3, yoloxSide, yoloxSide) || len(outs) < 1 || !dimsFit(outs[0].Dims, 1, -1, yoloxOutputs) {
		return nil, "", "", fmt.Errorf("dwpose: %s: tensors %v -> %v, want one input [1,3,640,640] and an output [1,N,85] (YOLOX-L)", FileYOLOX, ins, outs)
	}
	s, err := rt.NewSession(ctx, inference.SessionSpec{Name: FileYOLOX, Path: path, Inputs: []string{ins[0].Name}, Outputs: []string{outs[0].Name}, Device: device})
	if err != nil {
		return nil, "", "", fmt.Errorf("dwpose: %s: %w", FileYOLOX, err)
	}
	return s, ins[0].Name, outs[0].Name, nil
}

func (d *DWPose) loadPose(ctx context.Context, rt *inference.Runtime, dir, device string) error {
	path := filepath.Join(dir, FileDWPose)
	ins, outs, err := rt.Inspect(ctx, path)
	if err != nil {
		return fmt.Errorf("dwpose: %s: %w", FileDWPose, err)
	}
	if len(ins) != 1 || !dimsFit(ins[0].Dims, 1, 3, dwPoseInH, dwPoseInW) || len(outs) != 2 ||
		!dimsFit(outs[0].Dims, 1, dwWholeBodyKeys, dwPoseInW*dwSimCCSplit) || !dimsFit(outs[1].Dims, 1, dwWholeBodyKeys, dwPoseInH*dwSimCCSplit) {
		return fmt.Errorf("dwpose: %s: tensors %v -> %v, want [1,3,384,288] -> SimCC [1,133,576] and [1,133,768]", FileDWPose, ins, outs)
	}
	d.poseIn, d.poseX, d.poseY = ins[0].Name, outs[0].Name, outs[1].Name
	d.simccX, d.simccY = dwPoseInW*dwSimCCSplit, dwPoseInH*dwSimCCSplit
	d.pose, err = rt.NewSession(ctx, inference.SessionSpec{Name: FileDWPose, Path: path, Inputs: []string{d.poseIn}, Outputs: []string{d.poseX, d.poseY}, Device: device})
	if err != nil {
		return fmt.Errorf("dwpose: %s: %w", FileDWPose, err)
	}
	return nil
}

// dimsFit: same rank, and every wanted dimension > 0 equals the declared
// one when that is static.
func dimsFit(got []int64, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		if w > 0 && got[i] > 0 && got[i] != w {
			return false
		}
	}
	return true
}

// Close releases both sessions. Idempotent and nil-safe.
func (d *DWPose) Close() error {
	if d == nil {
		return nil
	}
	var errs []error
	if d.det != nil {
		errs = append(errs, d.det.Close())
	}
	if d.pose != nil {
		errs = append(errs, d.pose.Close())
	}
	return errors.Join(errs...)
}

// Detect is DWposeDetector(img) on an RGB image (the reference feeds BGR;
// the planes are swapped here): person boxes, whole-body keypoints per box
// (the whole image when no person is found), the best person, the pose
// dictionary in normalised coordinates.
func (d *DWPose) Detect(ctx context.Context, img image.Image) (PoseDict, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w < 1 || h < 1 || w > maxDWPoseSide || h > maxDWPoseSide {
		return PoseDict{}, fmt.Errorf("dwpose: image %dx%d must be 1..%d on each side", w, h, maxDWPoseSide)
	}
	bgr := toBGR(img)
	ratio := float32(math.Min(float64(yoloxSide)/float64(h), float64(yoloxSide)/float64(w)))
	in := yoloxInput(bgr, w, h, ratio)
	out, err := d.det.Run(ctx, []inference.Tensor{in})
	if err != nil {
		return PoseDict{}, fmt.Errorf("dwpose: %s: %w", FileYOLOX, err)
	}
	boxes, err := yoloxPersons(out[0].Data, ratio)
	if err != nil {
		return PoseDict{}, err
	}
	var b64 [][4]float64
	for _, bx := range boxes {
		b64 = append(b64, [4]float64{float64(bx[0]), float64(bx[1]), float64(bx[2]), float64(bx[3])})
	}
	if len(b64) == 0 {
		b64 = [][4]float64{{0, 0, float64(w), float64(h)}}
	}
	var kps [][][2]float64
	var scs [][]float64
	for _, bx := range b64 {
		center, scale := dwCenterScale(bx, dwPoseInW, dwPoseInH)
		t := dwPoseInput(bgr, w, h, center, scale)
		o, err := d.pose.Run(ctx, []inference.Tensor{t})
		if err != nil {
			return PoseDict{}, fmt.Errorf("dwpose: %s: %w", FileDWPose, err)
		}
		kp, sc, err := simccDecode(o[0].Data, o[1].Data, dwWholeBodyKeys, d.simccX, d.simccY, dwPoseInW, dwPoseInH, center, scale)
		if err != nil {
			return PoseDict{}, err
		}
		kp, sc = mmposeToOpenPose(kp, sc)
		kps, scs = append(kps, kp), append(scs, sc)
	}
	return dwPoseDict(kps, scs, w, h), nil
}

// toBGR is the image as interleaved B, G, R bytes.
func toBGR(img image.Image) []uint8 {
	b := img.Bounds()
	out := make([]uint8, 0, b.Dx()*b.Dy()*bgrChannels)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out = append(out, uint8(bl>>8), uint8(g>>8), uint8(r>>8))
		}
	}
	return out
}

// yoloxInput is onnxdet.preprocess: the image scaled by ratio (bilinear,
// pixel centres aligned as cv2.INTER_LINEAR; float, not OpenCV's 11-bit
// fixed point) into the top-left of a 640×640 canvas of 114, CHW float
// 0..255 in BGR order.
func yoloxInput(bgr []uint8, w, h int, ratio float32) inference.Tensor {
	rw, rh := int(float64(w)*float64(ratio)), int(float64(h)*float64(ratio))
	t := inference.Tensor{Shape: []int64{1, 3, yoloxSide, yoloxSide}, Data: make([]float32, 3*yoloxSide*yoloxSide)}
	for i := range t.Data {
		t.Data[i] = yoloxPad
	}
	sx, sy := float64(w)/float64(rw), float64(h)/float64(rh)
	plane := yoloxSide * yoloxSide
	for y := range rh {
		fy := (float64(y)+0.5)*sy - 0.5
		for x := range rw {
			fx := (float64(x)+0.5)*sx - 0.5
			for c := range 3 {
				v := bilinear(bgr, w, h, c, fx, fy, true)
				t.Data[c*plane+y*yoloxSide+x] = float32(math.Round(v))
			}
		}
	}
	return t
}

// dwPoseInput is top_down_affine + normalisation: the box (centre, scale)
// mapped onto 288×384 (bilinear, zeros outside), minus the mean over the
// standard deviation per BGR plane.
func dwPoseInput(bgr []uint8, w, h int, center, scale [2]float64) inference.Tensor {
	t := inference.Tensor{Shape: []int64{1, 3, dwPoseInH, dwPoseInW}, Data: make([]float32, 3*dwPoseInH*dwPoseInW)}
	k := scale[0] / dwPoseInW // source pixels per input pixel
	plane := dwPoseInH * dwPoseInW
	for y := range dwPoseInH {
		fy := center[1] + (float64(y)-dwPoseInH/2.0)*k
		for x := range dwPoseInW {
			fx := center[0] + (float64(x)-dwPoseInW/2.0)*k
			for c := range 3 {
				v := float32(math.Round(bilinear(bgr, w, h, c, fx, fy, false)))
				t.Data[c*plane+y*dwPoseInW+x] = (v - dwMean[c]) / dwStd[c]
			}
		}
	}
	return t
}

// bilinear samples channel c of an interleaved 3-channel image at (fx, fy);
// outside the image it replicates the edge (clamp) or gives 0.
func bilinear(px []uint8, w, h, c int, fx, fy float64, clamp bool) float64 {
	x0, y0 := int(math.Floor(fx)), int(math.Floor(fy))
	ax, ay := fx-float64(x0), fy-float64(y0)
	at := func(x, y int) float64 {
		if clamp {
			x, y = min(max(x, 0), w-1), min(max(y, 0), h-1)
		} else if x < 0 || y < 0 || x >= w || y >= h {
			return 0
		}
		return float64(px[(y*w+x)*3+c])
	}
	return (1-ay)*((1-ax)*at(x0, y0)+ax*at(x0+1, y0)) + ay*((1-ax)*at(x0, y0+1)+ax*at(x0+1, y0+1))
}
