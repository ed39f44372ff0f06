package cv

/*
#cgo pkg-config: opencv4
#cgo CXXFLAGS: -std=c++11
#include <stdlib.h>
#include "ext.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"image"
	"unsafe"
)

// Inpaint fills the pixels where mask > 0 from their surroundings with
// OpenCV's Telea method (cv::inpaint). radius is the neighbourhood in pixels.
// mask must have img's size.
func Inpaint(img image.Image, mask *image.Gray, radius float64) (*image.RGBA, error) {
	r := toRGBA(img)
	w, h := r.Rect.Dx(), r.Rect.Dy()
	if mask == nil || mask.Rect.Dx() != w || mask.Rect.Dy() != h {
		return nil, errors.New("cv: inpaint mask must match the image size")
	}
	if w == 0 || h == 0 {
		return nil, errors.New("cv: inpaint of an empty image")
	}
	src := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		row := r.Pix[y*r.Stride:]
		for x := 0; x < w; x++ {
			src[(y*w+x)*3+0] = row[x*4+2]
			src[(y*w+x)*3+1] = row[x*4+1]
			src[(y*w+x)*3+2] = row[x*4+0]
		}
	}
	m := make([]byte, w*h)
	for y := 0; y < h; y++ {
		copy(m[y*w:(y+1)*w], mask.Pix[y*mask.Stride:y*mask.Stride+w])
	}
	dst := make([]byte, w*h*3)
	rc := C.fd_inpaint((*C.uchar)(unsafe.Pointer(&src[0])), (*C.uchar)(unsafe.Pointer(&m[0])), C.int(w), C.int(h),
		C.double(radius), 0, (*C.uchar)(unsafe.Pointer(&dst[0])))
	if rc != 0 {
		return nil, fmt.Errorf("cv: inpaint failed in OpenCV")
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		out.Pix[i*4+0] = dst[i*3+2]
		out.Pix[i*4+1] = dst[i*3+1]
		out.Pix[i*4+2] = dst[i*3+0]
		out.Pix[i*4+3] = 255
	}
	return out, nil
}
