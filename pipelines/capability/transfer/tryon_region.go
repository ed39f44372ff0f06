package transfer

import (
	"image"
	"image/draw"
	"math"

	"fashiond/perception"
	"fashiond/pipelines/capability/mask"
)

// The try-on region: with an installed try-on model (CatVTON layout) the
// tryon and product-to-model pipelines let the model repaint the garment
// region this transfer computes, instead of returning the warp.
const (
	// TryOnGrowPx grows the garment region so the model repaints its seams.
	TryOnGrowPx = 2
	// TryOnFaceMargin widens the face box (share of its size on each side)
	// before it is cut out of the region.
	TryOnFaceMargin = 0.15
	// TryOnRegionNote says what the model repainted and what it kept.
	TryOnRegionNote = "the model repainted the subject's garment region as the classical transfer computes it " +
		"(the old garment it removes joined with where it lays the new one, behind arms, hands and hair; grown by 2 px, the face box cut out); " +
		"face, hands, hair, the other people and the background are the photo's own"
)

// tryOnSteps are a try-on model's steps per accuracy (CatVTON's own
// default is 50).
var tryOnSteps = map[string]int{
	AccuracyStandard: 20,
	AccuracyHigh:     30,
	AccuracyHyper:    50,
}

// TryOnSteps is the number of a try-on model's steps for an accuracy
// ("" is standard's; an unknown accuracy is 0, the model's default).
func TryOnSteps(accuracy string) int {
	if accuracy == "" {
		accuracy = AccuracyStandard
	}
	return tryOnSteps[accuracy]
}

// TryOnRegion is the region a try-on model repaints on the transfer's
// person image: the old garment region the transfer removed joined with the
// new garment's layer (which lies behind arms, hands, hair and face), grown
// by TryOnGrowPx, minus the face box widened by TryOnFaceMargin. face is in
// the coordinates of the photo the person image was cropped from, origin
// the crop's corner in that photo (image.Point{} when not cropped); a nil
// face cuts nothing out.
func (info *TransferInfo) TryOnRegion(face *perception.Face, origin image.Point) *image.Gray {
	lay := mask.Binary(info.Layer, 128)
	m := image.NewGray(lay.Rect)
	copy(m.Pix, lay.Pix)
	if info.Replaced != nil && info.Replaced.Rect.Size() == m.Rect.Size() {
		rep := mask.Binary(info.Replaced, 128)
		for i, v := range rep.Pix {
			m.Pix[i] = max(m.Pix[i], v)
		}
	}
	m = mask.Dilate(m, TryOnGrowPx)
	if face != nil {
		bw, bh := face.Box[2]-face.Box[0], face.Box[3]-face.Box[1]
		box := image.Rect(
			int(math.Floor(face.Box[0]-TryOnFaceMargin*bw)), int(math.Floor(face.Box[1]-TryOnFaceMargin*bh)),
			int(math.Ceil(face.Box[2]+TryOnFaceMargin*bw)), int(math.Ceil(face.Box[3]+TryOnFaceMargin*bh)),
		).Sub(origin).Intersect(m.Rect)
		draw.Draw(m, box, image.Black, image.Point{}, draw.Src)
	}
	return m
}
