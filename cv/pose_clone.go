package cv

import (
	"errors"
	"image"
	"image/color"
	"math"

	"gocv.io/x/gocv"
)

// SeamlessClone blends src into dst where mask > 0 by Poisson blending
// (cv::seamlessClone, NORMAL_CLONE). src and mask are in dst's coordinates
// (the same size as dst): the masked pixels of src land where they are, with
// their gradients kept and their colours adapted to dst along the seam. The
// mask's one-pixel frame is ignored (OpenCV clears it). It fails when the
// mask is empty or sizes differ.
func SeamlessClone(dst, src image.Image, mask *image.Gray) (*image.RGBA, error) {
	d, s := toRGBA(dst), toRGBA(src)
	w, h := d.Rect.Dx(), d.Rect.Dy()
	if s.Rect.Dx() != w || s.Rect.Dy() != h || mask == nil || mask.Rect.Dx() != w || mask.Rect.Dy() != h {
		return nil, errors.New("cv: seamless clone needs src, dst and mask of one size")
	}
	if w < 4 || h < 4 {
		return nil, errors.New("cv: seamless clone of an image smaller than 4x4")
	}
	m := image.NewGray(image.Rect(0, 0, w, h))
	bb := image.Rectangle{Min: image.Pt(w, h)}
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			if mask.Pix[(y+mask.Rect.Min.Y-mask.Rect.Min.Y)*mask.Stride+x] > 0 {
				m.Pix[y*m.Stride+x] = 255
				bb = bb.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	if bb.Empty() {
		return nil, errors.New("cv: seamless clone mask is empty")
	}
	// OpenCV places the mask's bounding box centred at p: tl = p - size/2.
	// Choosing p this way keeps the pixels where they are.
	p := image.Pt(bb.Min.X+bb.Dx()/2, bb.Min.Y+bb.Dy()/2)
	sm, err := matFromImage(s)
	if err != nil {
		return nil, err
	}
	defer sm.Close()
	dm, err := matFromImage(d)
	if err != nil {
		return nil, err
	}
	defer dm.Close()
	mm, err := matFromGray(m)
	if err != nil {
		return nil, err
	}
	defer mm.Close()
	out := gocv.NewMat()
	defer out.Close()
	// gocv v0.31 numbers its flags from 0 (NormalClone = 0) while OpenCV's
	// cv::NORMAL_CLONE is 1; 0 selects no cloning mode in OpenCV 4.6 and
	// returns a wrong blend, so OpenCV's own value is passed.
	const cvNormalClone = gocv.SeamlessCloneFlags(1)
	gocv.SeamlessClone(sm, dm, mm, p, &out, cvNormalClone)
	if out.Empty() || out.Cols() != w || out.Rows() != h {
		return nil, errors.New("cv: seamless clone failed in OpenCV")
	}
	return imageFromMat(out), nil
}

// WarpAffine maps img into a w x h image with the 2x3 matrix m, where
// dst(x,y) = src(m^-1 (x,y)), i.e. m takes source to destination pixels
// ([a b c; d e f] as m[0..5]). Bilinear; pixels from outside the source are
// transparent.
func WarpAffine(img image.Image, m [6]float64, w, h int) *image.RGBA {
	if w <= 0 || h <= 0 {
		return image.NewRGBA(image.Rect(0, 0, 0, 0))
	}
	src := toRGBA(img)
	sm, err := matFromImageRGBA(src)
	if err != nil {
		return image.NewRGBA(image.Rect(0, 0, w, h))
	}
	defer sm.Close()
	mm := gocv.NewMatWithSize(2, 3, gocv.MatTypeCV64F)
	defer mm.Close()
	for i := 0; i < 6; i++ {
		mm.SetDoubleAt(i/3, i%3, m[i])
	}
	out := gocv.NewMat()
	defer out.Close()
	gocv.WarpAffineWithParams(sm, &out, mm, image.Pt(w, h), gocv.InterpolationLinear, gocv.BorderConstant, color.RGBA{})
	res := image.NewRGBA(image.Rect(0, 0, w, h))
	copy(res.Pix, out.ToBytes())
	return res
}

// matFromImageRGBA converts to an RGBA 8UC4 Mat (channel order kept). The
// caller closes it.
func matFromImageRGBA(r *image.RGBA) (gocv.Mat, error) {
	w, h := r.Rect.Dx(), r.Rect.Dy()
	buf := make([]byte, w*h*4)
	for y := 0; y < h; y++ {
		copy(buf[y*w*4:(y+1)*w*4], r.Pix[y*r.Stride:y*r.Stride+w*4])
	}
	return gocv.NewMatFromBytes(h, w, gocv.MatTypeCV8UC4, buf)
}

// SimilarityFromPointsF fits x' = s R x + t from src to dst points by
// least squares (Umeyama without reflection) and returns it as a 2x3
// matrix. It needs at least two distinct points.
func SimilarityFromPointsF(src, dst [][2]float64) ([6]float64, error) {
	n := len(src)
	if n < 2 || len(dst) != n {
		return [6]float64{}, errors.New("cv: similarity needs two or more point pairs")
	}
	var msx, msy, mdx, mdy float64
	for i := 0; i < n; i++ {
		msx += src[i][0]
		msy += src[i][1]
		mdx += dst[i][0]
		mdy += dst[i][1]
	}
	fn := float64(n)
	msx, msy, mdx, mdy = msx/fn, msy/fn, mdx/fn, mdy/fn
	// For a similarity [a -b; b a]: minimise sum |A s_i + t - d_i|^2.
	var sxx, a, b float64
	for i := 0; i < n; i++ {
		x, y := src[i][0]-msx, src[i][1]-msy
		u, v := dst[i][0]-mdx, dst[i][1]-mdy
		sxx += x*x + y*y
		a += x*u + y*v
		b += x*v - y*u
	}
	if sxx < 1e-12 || math.IsNaN(a+b) {
		return [6]float64{}, errors.New("cv: similarity from coincident points")
	}
	a /= sxx
	b /= sxx
	tx := mdx - (a*msx - b*msy)
	ty := mdy - (b*msx + a*msy)
	return [6]float64{a, -b, tx, b, a, ty}, nil
}
