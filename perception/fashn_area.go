package perception

import (
	"image"
	"math"

	"github.com/disintegration/imaging"
)

// OpenCV's INTER_AREA for shrinking by a non-integer factor (cv::resize's
// ResizeArea_Invoker for 8-bit images): each destination pixel is the
// overlap-weighted mean of the source pixels under it, accumulated in
// float32 row by row and rounded half to even. FASHN's ResizePad shrinks
// photos with it; after its pre-resize to fit 864×864 the factor to
// 576×864 is at most 1.5, so OpenCV's integer-factor fast path never
// applies.

// areaTap is one source pixel's weight in a destination pixel.
type areaTap struct {
	di, si int
	alpha  float32
}

// areaTabs is computeResizeAreaTab for one axis.
func areaTabs(ssize, dsize int, scale float64) []areaTap {
	var tab []areaTap
	for dx := range dsize {
		fsx1 := float64(dx) * scale
		fsx2 := fsx1 + scale
		cell := math.Min(scale, float64(ssize)-fsx1)
		sx1, sx2 := int(math.Ceil(fsx1)), int(math.Floor(fsx2))
		sx2 = min(sx2, ssize-1)
		sx1 = min(sx1, sx2)
		if float64(sx1)-fsx1 > 1e-3 {
			tab = append(tab, areaTap{dx, sx1 - 1, float32((float64(sx1) - fsx1) / cell)})
		}
		for sx := sx1; sx < sx2; sx++ {
			tab = append(tab, areaTap{dx, sx, float32(1.0 / cell)})
		}
		if fsx2-float64(sx2) > 1e-3 {
			tab = append(tab, areaTap{dx, sx2, float32(math.Min(math.Min(fsx2-float64(sx2), 1), cell) / cell)})
		}
	}
	return tab
}

// resizeAreaCV shrinks img to w×h (RGB; alpha set opaque) as cv2.resize
// with INTER_AREA does for non-integer factors.
func resizeAreaCV(img image.Image, w, h int) *image.NRGBA {
	src := imaging.Clone(img)
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	xtab := areaTabs(sw, w, 1/(float64(w)/float64(sw)))
	ytab := areaTabs(sh, h, 1/(float64(h)/float64(sh)))
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	buf := make([]float32, 3*w)
	sum := make([]float32, 3*w)
	flush := func(dy int) {
		for dx := range w {
			for c := range 3 {
				out.Pix[dy*out.Stride+4*dx+c] = uint8(max(0, min(255, math.RoundToEven(float64(sum[3*dx+c])))))
			}
			out.Pix[dy*out.Stride+4*dx+3] = 255
		}
	}
	prev := ytab[0].di
	for _, yt := range ytab {
		row := src.Pix[yt.si*src.Stride:]
		clear(buf)
		for _, xt := range xtab {
			for c := range 3 {
				buf[3*xt.di+c] = buf[3*xt.di+c] + float32(row[4*xt.si+c])*xt.alpha
			}
		}
		if yt.di != prev {
			flush(prev)
			for i := range sum {
				sum[i] = yt.alpha * buf[i]
			}
			prev = yt.di
		} else {
			for i := range sum {
				sum[i] += yt.alpha * buf[i]
			}
		}
	}
	flush(prev)
	return out
}
