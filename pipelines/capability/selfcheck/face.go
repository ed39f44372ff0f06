package selfcheck

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/cv"
	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/raster"
)

// Face check names.
const (
	NameFaceTexture  = "face_texture"
	NameFaceGeometry = "face_geometry"
	NameFaceSymmetry = "face_symmetry"
)

// Limits of the face checks. Measured on model-create generate with
// faceModelId (the uploaded portrait), no img2img model, for the four
// shared portraits used as the face model (gocv_face,
// pexels_woman_portrait, pexels_woman_facepaint_portrait, astronaut) on
// two presets: man-standing-studio ("man in a studio, front", a frontal
// face about 130 pixels wide) and woman-standing-grass ("woman standing,
// full body", a three-quarter face about 60 pixels wide). Looked at:
// pexels_woman_portrait, facepaint and astronaut on the studio man give
// whole faces; gocv_face (a man with glasses) on him gives a smeared nose
// and mouth under a split lens, and every face on the three-quarter woman
// a smeared, doubled face; face_similarity passed all eight (0.90-0.99).
// The figures are TestFaceIntegrityOnTransfers' and the pipeline's.
const (
	// MinFaceTexture is the smallest zero-normalised cross-correlation of
	// luminance between the output's face and the source face, both
	// aligned on their five landmarks to one canonical face, in the worst
	// of three cells down the face's middle (between the eyes, the nose,
	// the mouth; each cell's best within textureShift). Whole faces
	// 0.69-0.96; the three-quarter woman 0.48-0.54 (pexels_woman_portrait,
	// TestFaceIntegrityOnTransfers and the pipeline). gocv_face on the studio man measures
	// 0.64-0.68 and passes: its face is the source's own; the damage there
	// is the glasses and moustache cut at the blend's edge, which no check
	// here measures.
	MinFaceTexture = 0.55
	// MaxFaceGeometry is the largest root-mean-square distance between
	// the output face's five landmarks and the source face's, each set
	// aligned to the canonical face by its own similarity, in canonical
	// eye distances. Whole faces 0.04-0.08; the three-quarter woman
	// 0.28-0.35 (a frontal face's landmarks pasted on a turned head).
	MaxFaceGeometry = 0.15
	// MaxFaceSymmetry is the largest growth of the landmarks' asymmetry
	// (asymmetry: the nose's and mouth's sideways offsets from the eyes'
	// centre line and the mouth corners' height difference, in canonical
	// eye distances) from the source face to the output's. Whole faces
	// 0-0.035; the three-quarter woman 0.44-0.56.
	MaxFaceSymmetry = 0.2
)

// canon is the canonical face (a 112 x 112 crop) the five landmarks are
// aligned to: right eye, left eye, nose tip, right and left mouth corner
// (the common ArcFace alignment template).
var canon = [5][2]float64{{38.29, 51.70}, {73.53, 51.50}, {56.03, 71.74}, {41.55, 92.37}, {70.73, 92.20}}

const (
	// canonSize is the canonical crop's side in pixels.
	canonSize = 112
	// canonEyeDist is the canonical eye distance in pixels.
	canonEyeDist = 35.24
	// textureGrid is the number of cells per side of the inner face
	// (the eyes' row, the nose's, the mouth's).
	textureGrid = 3
	// textureShift is the largest shift, in canonical pixels, face_texture
	// tries between the two faces' cells.
	textureShift = 3
)

// innerCanon is the inner face on the canonical crop (eyebrows to chin,
// cheek to cheek); featureCol its middle column (between the eyes, the
// nose, the mouth): the cells face_texture compares. The side columns
// hold the cheeks' edges, hair and background, which stay the base
// model's head shape after a transfer.
var (
	innerCanon = image.Rect(26, 38, 86, 104)
	featureCol = image.Rect(38, 38, 74, 104)
)

// FaceIntegrity compares the face of out found where want is (the
// face detected on out whose box overlaps want's most) with the source
// face (srcImg with its five landmarks src, in srcImg's pixels): texture
// (NameFaceTexture), landmark geometry (NameFaceGeometry) and landmark
// symmetry (NameFaceSymmetry), each against the source face's. When out shows no
// face overlapping want, every check fails with its worst value.
func FaceIntegrity(ctx context.Context, p perception.Perception, out image.Image, want perception.Face, srcImg image.Image, src [5]perception.Point) ([]pipelines.Check, error) {
	faces, err := p.Faces(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("selfcheck: faces: %w", err)
	}
	best, bi := 0.0, -1
	for i, g := range faces {
		if v := iou(want.Box, g.Box); v > best {
			best, bi = v, i
		}
	}
	if bi < 0 || faces[bi].LandmarksEstimated {
		return []pipelines.Check{
			pipelines.MaxCheck(NameFaceGeometry, 1, MaxFaceGeometry),
			pipelines.MaxCheck(NameFaceSymmetry, 1, MaxFaceSymmetry),
			pipelines.MinCheck(NameFaceTexture, -1, MinFaceTexture),
		}, nil
	}
	b := out.Bounds()
	got := faces[bi].Landmarks
	for i := range got {
		got[i].X += float64(b.Min.X)
		got[i].Y += float64(b.Min.Y)
	}
	return FaceCompare(out, got, srcImg, src)
}

// FaceCompare is FaceIntegrity's measure of the face with landmarks got
// on out against the source face (landmarks src on srcImg); landmarks are
// in the images' own coordinates (bounds' Min included).
func FaceCompare(out image.Image, got [5]perception.Point, srcImg image.Image, src [5]perception.Point) ([]pipelines.Check, error) {
	co, err := canonical(out, got)
	if err != nil {
		return nil, err
	}
	cs, err := canonical(srcImg, src)
	if err != nil {
		return nil, err
	}
	geo, err := landmarkDrift(got, src)
	if err != nil {
		return nil, err
	}
	tex := math.Inf(1)
	ch := innerCanon.Dy() / textureGrid
	for gy := range textureGrid {
		r := image.Rect(featureCol.Min.X, innerCanon.Min.Y+gy*ch, featureCol.Max.X, innerCanon.Min.Y+(gy+1)*ch)
		tex = math.Min(tex, bestShift(co, cs, r))
	}
	pa, err := toCanon(got)
	if err != nil {
		return nil, err
	}
	pb, err := toCanon(src)
	if err != nil {
		return nil, err
	}
	symLoss := asymmetry(pa) - asymmetry(pb)
	return []pipelines.Check{
		pipelines.MaxCheck(NameFaceGeometry, round4(geo), MaxFaceGeometry),
		pipelines.MaxCheck(NameFaceSymmetry, round4(math.Max(0, symLoss)), MaxFaceSymmetry),
		pipelines.MinCheck(NameFaceTexture, round4(tex), MinFaceTexture),
	}, nil
}

// landmarkDrift is the RMS distance, in canonical eye distances, between
// two landmark sets each aligned to the canonical face by its own
// similarity.
func landmarkDrift(a, b [5]perception.Point) (float64, error) {
	pa, err := toCanon(a)
	if err != nil {
		return 0, err
	}
	pb, err := toCanon(b)
	if err != nil {
		return 0, err
	}
	s := 0.0
	for i := range pa {
		s += (pa[i][0]-pb[i][0])*(pa[i][0]-pb[i][0]) + (pa[i][1]-pb[i][1])*(pa[i][1]-pb[i][1])
	}
	return math.Sqrt(s/float64(len(pa))) / canonEyeDist, nil
}

// toCanon maps landmarks l to the canonical crop by the similarity fitted
// from l to canon.
func toCanon(l [5]perception.Point) ([5][2]float64, error) {
	var out [5][2]float64
	m, err := cv.SimilarityFromPointsF(points(l), canon[:])
	if err != nil {
		return out, fmt.Errorf("selfcheck: face alignment: %w", err)
	}
	for i, p := range l {
		out[i] = [2]float64{m[0]*p.X + m[1]*p.Y + m[2], m[3]*p.X + m[4]*p.Y + m[5]}
	}
	return out, nil
}

// canonical is the luminance of img's face (landmarks l) resampled onto
// the canonical crop by the similarity fitted from canon to l.
func canonical(img image.Image, l [5]perception.Point) ([]float64, error) {
	m, err := cv.SimilarityFromPointsF(canon[:], points(l))
	if err != nil {
		return nil, fmt.Errorf("selfcheck: face alignment: %w", err)
	}
	rgba := raster.RGBA(img)
	w, h := rgba.Rect.Dx(), rgba.Rect.Dy()
	ox, oy := float64(rgba.Rect.Min.X), float64(rgba.Rect.Min.Y)
	lum := make([]float64, canonSize*canonSize)
	for y := range canonSize {
		for x := range canonSize {
			fx := m[0]*float64(x) + m[1]*float64(y) + m[2] - ox
			fy := m[3]*float64(x) + m[4]*float64(y) + m[5] - oy
			fx = math.Max(0, math.Min(float64(w-1), fx))
			fy = math.Max(0, math.Min(float64(h-1), fy))
			r, g, b, _ := raster.SampleBilinear(rgba.Pix[:], w, h, float32(fx), float32(fy))
			lum[y*canonSize+x] = 0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)
		}
	}
	return lum, nil
}

// znccAt is the zero-normalised cross-correlation of a over r (canonical
// crops) against b over r shifted by d. A flat region (no texture in
// either) correlates 0.
func znccAt(a, b []float64, r image.Rectangle, d image.Point) float64 {
	var sa, sb, saa, sbb, sab, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			u, v := a[y*canonSize+x], b[(y+d.Y)*canonSize+x+d.X]
			sa += u
			sb += v
			saa += u * u
			sbb += v * v
			sab += u * v
			n++
		}
	}
	va, vb := saa-sa*sa/n, sbb-sb*sb/n
	if va <= 1e-9 || vb <= 1e-9 {
		return 0
	}
	return (sab - sa*sb/n) / math.Sqrt(va*vb)
}

func points(l [5]perception.Point) [][2]float64 {
	p := make([][2]float64, len(l))
	for i, q := range l {
		p[i] = [2]float64{q.X, q.Y}
	}
	return p
}

// asymmetry is how far canonical landmarks l are from a mirror-symmetric
// face, in canonical eye distances: the nose tip's and the mouth's centre's
// sideways offsets from the eyes' centre line and the mouth corners'
// height difference.
func asymmetry(l [5][2]float64) float64 {
	cx := (l[0][0] + l[1][0]) / 2
	mouth := (l[3][0] + l[4][0]) / 2
	return (math.Abs(l[2][0]-cx) + math.Abs(mouth-cx) + math.Abs(l[3][1]-l[4][1])) / canonEyeDist
}

// bestShift is the best zncc of a's cell r against b's, b's cell shifted
// by up to textureShift canonical pixels each way: two alignments of
// the same face on detected landmarks differ by a pixel or two, which a
// cell of fine texture (an eye's lashes, a lip line) must not fail on.
func bestShift(a, b []float64, r image.Rectangle) float64 {
	best := math.Inf(-1)
	for dy := -textureShift; dy <= textureShift; dy++ {
		for dx := -textureShift; dx <= textureShift; dx++ {
			best = math.Max(best, znccAt(a, b, r, image.Pt(dx, dy)))
		}
	}
	return best
}
