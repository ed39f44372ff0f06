package perception

import (
	"fmt"
	"math"
	"sort"
)

// DWPose post-processing (pure Go): YOLOX boxes, SimCC keypoints, the
// OpenPose reordering and the pose dictionary, as the reference computes
// them (float32 where it keeps float32).

// Detector and pose-model constants of the reference (onnxdet.py,
// onnxpose.py).
const (
	yoloxSide       = 640
	yoloxPad        = 114
	yoloxNMS        = 0.45
	yoloxScoreMin   = 0.1
	yoloxPersonMin  = 0.3
	yoloxOutputs    = 85 // 4 box + objectness + 80 classes
	dwBoxPadding    = 1.25
	dwSimCCSplit    = 2.0
	dwWholeBodyKeys = 133
)

var yoloxStrides = []int{8, 16, 32}

// yoloxPersons decodes YOLOX's raw output (rows × 85, at 640×640) into
// person boxes (x1, y1, x2, y2) in the original image: grid decoding,
// objectness × class scores, class-0 NMS at 0.45 over scores above 0.1,
// then scores above 0.3 (inference_detector). ratio is the preprocessing
// scale (min(640/h, 640/w)).
func yoloxPersons(raw []float32, ratio float32) ([][4]float32, error) {
	rows := 0
	for _, s := range yoloxStrides {
		rows += (yoloxSide / s) * (yoloxSide / s)
	}
	if len(raw) != rows*yoloxOutputs {
		return nil, fmt.Errorf("dwpose: detector output has %d values, want %d×%d", len(raw), rows, yoloxOutputs)
	}
	var boxes [][4]float32
	var scores []float32
	r := 0
	for _, s := range yoloxStrides {
		n := yoloxSide / s
		for gy := range n {
			for gx := range n {
				o := raw[r*yoloxOutputs : (r+1)*yoloxOutputs]
				r++
				score := o[4] * o[5]
				if !(score > yoloxScoreMin) {
					continue
				}
				cx := float32((float64(o[0]) + float64(gx)) * float64(s))
				cy := float32((float64(o[1]) + float64(gy)) * float64(s))
				w := float32(float64(float32(math.Exp(float64(o[2])))) * float64(s))
				h := float32(float64(float32(math.Exp(float64(o[3])))) * float64(s))
				b := [4]float32{cx - w/2, cy - h/2, cx + w/2, cy + h/2}
				for k := range b {
					b[k] /= ratio
				}
				boxes = append(boxes, b)
				scores = append(scores, score)
			}
		}
	}
	var out [][4]float32
	for _, i := range nmsKeep(boxes, scores, yoloxNMS) {
		if scores[i] > yoloxPersonMin {
			out = append(out, boxes[i])
		}
	}
	return out, nil
}

// nmsKeep is onnxdet.nms: greedy by descending score, dropping boxes whose
// IoU (with the +1 pixel convention) with a kept box exceeds thr.
func nmsKeep(boxes [][4]float32, scores []float32, thr float32) []int {
	order := make([]int, len(boxes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	area := func(b [4]float32) float32 { return (b[2] - b[0] + 1) * (b[3] - b[1] + 1) }
	var keep []int
	for len(order) > 0 {
		i := order[0]
		keep = append(keep, i)
		var rest []int
		for _, j := range order[1:] {
			w := max(0, min(boxes[i][2], boxes[j][2])-max(boxes[i][0], boxes[j][0])+1)
			h := max(0, min(boxes[i][3], boxes[j][3])-max(boxes[i][1], boxes[j][1])+1)
			inter := w * h
			if inter/(area(boxes[i])+area(boxes[j])-inter) <= thr {
				rest = append(rest, j)
			}
		}
		order = rest
	}
	return keep
}

// dwCenterScale is bbox_xyxy2cs with padding 1.25 followed by
// _fix_aspect_ratio to the pose input's w/h (top_down_affine's scale).
func dwCenterScale(b [4]float64, inW, inH int) (center, scale [2]float64) {
	center = [2]float64{(b[0] + b[2]) * 0.5, (b[1] + b[3]) * 0.5}
	scale = [2]float64{(b[2] - b[0]) * dwBoxPadding, (b[3] - b[1]) * dwBoxPadding}
	ar := float64(inW) / float64(inH)
	if scale[0] > scale[1]*ar {
		scale[1] = scale[0] / ar
	} else {
		scale[0] = scale[1] * ar
	}
	return center, scale
}

// simccDecode is get_simcc_maximum and decode: per keypoint the first
// arg-max of each axis, the smaller of the two maxima as score, (-1, -1)
// where the score is not positive, locations divided by the split ratio;
// then rescaled from the pose input into the image (postprocess).
func simccDecode(sx, sy []float32, k, wx, wy, inW, inH int, center, scale [2]float64) ([][2]float64, []float64, error) {
	if len(sx) != k*wx || len(sy) != k*wy {
		return nil, nil, fmt.Errorf("dwpose: SimCC outputs have %d and %d values, want %d×%d and %d×%d", len(sx), len(sy), k, wx, k, wy)
	}
	argmax := func(v []float32) (int, float32) {
		best, bv := 0, v[0]
		for i, x := range v {
			if x > bv {
				best, bv = i, x
			}
		}
		return best, bv
	}
	kp := make([][2]float64, k)
	sc := make([]float64, k)
	for i := range k {
		xi, xv := argmax(sx[i*wx : (i+1)*wx])
		yi, yv := argmax(sy[i*wy : (i+1)*wy])
		v := xv
		if xv > yv {
			v = yv
		}
		lx, ly := float32(xi), float32(yi)
		if v <= 0 {
			lx, ly = -1, -1
		}
		lx, ly = lx/dwSimCCSplit, ly/dwSimCCSplit
		kp[i] = [2]float64{
			float64(lx)/float64(inW)*scale[0] + center[0] - scale[0]/2,
			float64(ly)/float64(inH)*scale[1] + center[1] - scale[1]/2,
		}
		sc[i] = float64(v)
	}
	return kp, sc, nil
}

// mmposeToOpenPose is Wholebody's tail: a neck (mean of the shoulders,
// score 1 when both exceed 0.3, else 0) inserted at 17, and the body points
// moved into OpenPose order.
func mmposeToOpenPose(kp [][2]float64, sc []float64) ([][2]float64, []float64) {
	neck := [2]float64{(kp[5][0] + kp[6][0]) / 2, (kp[5][1] + kp[6][1]) / 2}
	ns := 0.0
	if sc[5] > dwVisible && sc[6] > dwVisible {
		ns = 1
	}
	k2 := make([][2]float64, 0, len(kp)+1)
	s2 := make([]float64, 0, len(sc)+1)
	k2 = append(append(append(k2, kp[:17]...), neck), kp[17:]...)
	s2 = append(append(append(s2, sc[:17]...), ns), sc[17:]...)
	mm := []int{17, 6, 8, 10, 7, 9, 12, 14, 16, 13, 15, 2, 1, 4, 3}
	op := []int{1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17}
	k3, s3 := append([][2]float64(nil), k2...), append([]float64(nil), s2...)
	for i := range mm {
		k3[op[i]], s3[op[i]] = k2[mm[i]], s2[mm[i]]
	}
	return k3, s3
}

// bestCandidate is DWposeDetector._find_best_candidate: among several
// people, the one with the largest (sum of visible headless scores ×
// extent of the headless points counted under the first person's
// visibility), or the largest score sum when every product is 0.
func bestCandidate(kps [][][2]float64, scs [][]float64) int {
	n := len(kps)
	valid0 := make([]bool, 13)
	for j := range 13 {
		valid0[j] = scs[0][1+j] > dwVisible
	}
	scores := make([]float64, n)
	prod := make([]float64, n)
	allZero := true
	for p := range n {
		for j := range 13 {
			if s := scs[p][1+j]; s > dwVisible {
				scores[p] += s
			}
		}
		var xs, ys []float64
		for j := range 13 {
			if !valid0[j] {
				continue
			}
			if x := kps[p][1+j][0]; x > 0 {
				xs = append(xs, x)
			}
			if y := kps[p][1+j][1]; y > 0 {
				ys = append(ys, y)
			}
		}
		area := 0.0
		if len(xs) > 0 && len(ys) > 0 {
			area = (maxOf(xs) - minOf(xs)) * (maxOf(ys) - minOf(ys))
		}
		prod[p] = scores[p] * area
		if math.IsNaN(prod[p]) || math.IsInf(prod[p], 0) {
			prod[p] = 0
		}
		if prod[p] != 0 {
			allZero = false
		}
	}
	pick := prod
	if allZero {
		pick = scores
	}
	best := 0
	for p := range n {
		if pick[p] > pick[best] {
			best = p
		}
	}
	return best
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// dwPoseDict is DWposeDetector.__call__ after the models: one person (the
// best when several), coordinates divided by the image size, body points
// above 0.3 indexed, hands and faces with hidden points at -1.
func dwPoseDict(kps [][][2]float64, scs [][]float64, w, h int) PoseDict {
	if len(kps) > 1 {
		b := bestCandidate(kps, scs)
		kps, scs = kps[b:b+1], scs[b:b+1]
	}
	var p PoseDict
	var rights [][][2]float64
	for n, kp := range kps {
		norm := make([][2]float64, len(kp))
		for i, q := range kp {
			norm[i] = [2]float64{q[0] / float64(w), q[1] / float64(h)}
		}
		sub := make([]float64, dwBodyPoints)
		for j := range dwBodyPoints {
			p.Candidate = append(p.Candidate, norm[j])
			sub[j] = -1
			if scs[n][j] > dwVisible {
				sub[j] = float64(dwBodyPoints*n + j)
			}
		}
		p.Subset = append(p.Subset, sub)
		hidden := func(i int) [2]float64 {
			if scs[n][i] < dwVisible {
				return [2]float64{-1, -1}
			}
			return norm[i]
		}
		face := make([][2]float64, 0, dwFacePoints)
		for i := 24; i < 92; i++ {
			face = append(face, hidden(i))
		}
		p.Faces = append(p.Faces, face)
		left, right := make([][2]float64, 0, dwHandPoints), make([][2]float64, 0, dwHandPoints)
		for i := 92; i < 113; i++ {
			left = append(left, hidden(i))
			right = append(right, hidden(i+dwHandPoints))
		}
		p.Hands = append(p.Hands, left)
		rights = append(rights, right)
	}
	// np.vstack([left hands, right hands]).
	p.Hands = append(p.Hands, rights...)
	return p
}
