package style

import "math"

// FollowFace makes the person whose detected face best overlaps box (x0,
// y0, x1, y1 in the styled image's pixels) the scene's subject, so that
// the look's face check measures the face a previous stage edited and
// measured, not whichever face this photo's analysis ranks first (a
// framed crop can show a dog's head the detector takes for a larger
// face). It keeps the scene's own choice when no face overlaps box.
func (s *Scene) FollowFace(box [4]float64) {
	if s == nil || s.a == nil {
		return
	}
	best, bestO := -1, 0.0
	for i := range s.a.People {
		f := s.a.People[i].Face
		if f == nil {
			continue
		}
		if o := overlap(f.Box, box); o > bestO {
			best, bestO = i, o
		}
	}
	if best >= 0 {
		s.a.Subject = best
		s.a.Rule = "the face the garment stage dressed"
	}
}

// overlap is the intersection-over-union of two boxes.
func overlap(a, b [4]float64) float64 {
	w := math.Min(a[2], b[2]) - math.Max(a[0], b[0])
	h := math.Min(a[3], b[3]) - math.Max(a[1], b[1])
	if w <= 0 || h <= 0 {
		return 0
	}
	in := w * h
	return in / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - in)
}
