package pipelinetest

import (
	"image"

	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
)

// How PasteHead grows a face box to the head it pastes: by this many
// face widths each side and face heights above (hair, a hat) and below
// (the chin).
const headGrowSide, headGrowUp, headGrowDown = 0.35, 0.7, 0.2

// PasteHead pastes a person's head a second time, shifted by (dx, dy)
// face widths: the pixels of img on the person mask pm (from 128) inside
// the face box f grown by headGrowSide, headGrowUp and headGrowDown, over
// a copy of img; the pasted pixels are also set (255) on a copy of
// region (the person's coverage: a warp that duplicates the head carries
// it in the person's layer). The damage a broken warp does when it draws
// the head twice.
func PasteHead(img *image.RGBA, pm, region *image.Gray, f perception.Face, dx, dy float64) (*image.RGBA, *image.Gray) {
	out := raster.CopyRGBA(img)
	reg := image.NewGray(region.Rect)
	copy(reg.Pix, region.Pix)
	fw, fh := f.Box[2]-f.Box[0], f.Box[3]-f.Box[1]
	box := image.Rect(int(f.Box[0]-headGrowSide*fw), int(f.Box[1]-headGrowUp*fh), int(f.Box[2]+headGrowSide*fw), int(f.Box[3]+headGrowDown*fh)).Intersect(img.Rect)
	ox, oy := int(dx*fw), int(dy*fw)
	for y := box.Min.Y; y < box.Max.Y; y++ {
		for x := box.Min.X; x < box.Max.X; x++ {
			tx, ty := x+ox, y+oy
			if pm.Pix[y*pm.Stride+x] < 128 || !image.Pt(tx, ty).In(img.Rect) {
				continue
			}
			copy(out.Pix[ty*out.Stride+tx*4:][:4], img.Pix[y*img.Stride+x*4:][:4])
			reg.Pix[ty*reg.Stride+tx] = 255
		}
	}
	return out, reg
}
