package perception

import (
	"image"
	"math/rand"
	"testing"
)

func benchImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewSource(1))
	r.Read(img.Pix)
	return img
}

func BenchmarkPreparePose4k(b *testing.B) {
	img := benchImage(2832, 4240)
	for b.Loop() {
		preparePose(img)
	}
}

func BenchmarkPrepareParse1MP(b *testing.B) {
	img := benchImage(832, 1248)
	for b.Loop() {
		prepareParse(img)
	}
}

func BenchmarkPrepareYuNet1MP(b *testing.B) {
	img := benchImage(832, 1248)
	for b.Loop() {
		prepareYuNet(img)
	}
}

func BenchmarkMaskUpsample512To1MP(b *testing.B) {
	m := floatMap{W: 512, H: 512, Data: make([]float32, 512*512)}
	for b.Loop() {
		sampleRegion(m, 0, 0, 512, 512, 832, 1248).toGray()
	}
}

func BenchmarkSRBlendTile(b *testing.B) {
	j := &srTileJob{out: make([]float32, 3*512*512)}
	dst := image.NewNRGBA(image.Rect(0, 0, 2048, 512))
	for b.Loop() {
		band := newSRBand(2048)
		band.add(j, 512, 64, true, true, false, false)
		band.flush(dst, 512)
	}
}
