package recolour

import (
	"image"
	"slices"

	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
)

// Stray-piece tuning.
const (
	// minPieceShare: a garment piece (a connected part of the garment mask
	// at alpha 0.5) smaller than this share of the largest piece is a
	// stray, a patch the parser took for cloth (a dog's fur, a lock of
	// hair, the wall behind it), not part of the person's garment.
	minPieceShare = 0.02
	// pieceReach: alpha is kept within this share of the image diagonal of
	// a kept piece (its soft edge) and dropped beyond.
	pieceReach = 0.01
	// chestDepth: in a face-framed photo (see frame) a piece of the garment
	// must reach the chest, the box below the chin as wide as the face and
	// this many face heights deep; hair beside the face, which the parser
	// takes for cloth where it lies over a light wall, does not.
	chestDepth = 1.0
)

// chestBox is the chest of a face-framed photo (empty otherwise).
func (r *Regions) chestBox() image.Rectangle {
	if !r.faceFramed {
		return image.Rectangle{}
	}
	b := r.faceBox
	return image.Rect(int(b[0]), int(b[3]), int(b[2]+1), int(b[3]+chestDepth*(b[3]-b[1])+1)).Intersect(image.Rect(0, 0, r.w, r.h))
}

// dropStrayPieces zeroes the garment alpha (garment-ness before the split)
// outside the pieces of the garment that are large enough, in a
// face-framed photo reach the chest, and are no marks on bare skin.
func (r *Regions) dropStrayPieces(garment *raster.Plane, wk *regionWork) {
	w, h := r.w, r.h
	lab, sizes := mask.Components(mask.Binary(mask.FromFloat(garment.P, w, h), 128))
	if len(sizes) < 2 {
		return
	}
	largest := slices.Max(sizes[1:])
	kept := make([]bool, len(sizes))
	anchored := make([]bool, len(sizes))
	chest := r.chestBox()
	for l := range anchored {
		anchored[l] = !r.faceFramed
	}
	for y := chest.Min.Y; y < chest.Max.Y; y++ {
		for x := chest.Min.X; x < chest.Max.X; x++ {
			anchored[lab[y*w+x]] = true
		}
	}
	for l := 1; l < len(sizes); l++ {
		kept[l] = anchored[l] && float64(sizes[l]) >= minPieceShare*float64(largest)
	}
	r.dropMarksOnSkin(kept, lab, sizes, wk)
	keep := image.NewGray(image.Rect(0, 0, w, h))
	for i, l := range lab {
		if kept[l] {
			keep.Pix[i] = 255
		}
	}
	near := mask.Dilate(keep, pieceReach*wk.diag)
	for i, v := range near.Pix {
		if v == 0 {
			garment.P[i] = 0
		}
	}
}
