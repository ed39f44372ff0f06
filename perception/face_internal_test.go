package perception

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"

	_ "image/jpeg"

	"fashiond/inference"
	"fashiond/internal/testenv"
)

// TestUltraFaceFallbackAgreesWithYuNet runs the fallback detector directly
// on the face photo: its box overlaps YuNet's and carries estimated
// landmarks inside it.
func TestUltraFaceFallbackAgreesWithYuNet(t *testing.T) {
	s := internalSuite(t)
	ctx := context.Background()
	td := os.Getenv("FASHIOND_TESTDATA")
	if td == "" {
		td = "../../shared/testdata"
	}
	f, err := os.Open(filepath.Join(td, "images", "gocv_face.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	yn, err := s.Faces(ctx, img)
	if err != nil || len(yn) == 0 {
		t.Fatalf("yunet: %v, %d faces", err, len(yn))
	}
	uf, err := s.model(ctx, ModelUltraFace)
	if err != nil {
		t.Fatal(err)
	}
	out, err := uf.Run(ctx, []inference.Tensor{prepareUltraFace(img)})
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	faces, err := decodeUltraFace(out, b.Dx(), b.Dy(), ultraScoreThresh)
	if err != nil {
		t.Fatal(err)
	}
	faces = nms(faces, faceNMSIoU)
	if len(faces) == 0 {
		t.Fatal("ultraface found no face")
	}
	t.Logf("ultraface %+v; yunet box %v", faces[0], yn[0].Box)
	if o := iou(faces[0].Box, yn[0].Box); o < 0.5 {
		t.Errorf("ultraface box %v and yunet box %v overlap only %.2f", faces[0].Box, yn[0].Box, o)
	}
	if !faces[0].LandmarksEstimated || faces[0].Source != ModelUltraFace {
		t.Errorf("fallback face not marked: %+v", faces[0])
	}
}

// internalSuite opens a suite for in-package tests (pipelinetest imports
// this package, so it cannot be used here).
func internalSuite(t *testing.T) *Suite {
	t.Helper()
	lib := testenv.ORTLib()
	dir := testenv.ModelsDir()
	ctx := context.Background()
	rt, err := inference.Open(ctx, inference.Config{LibPath: lib, IntraOpThreads: 2, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSuite(ctx, rt, dir, SuiteOptions{PoolSize: 1})
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); rt.Close() })
	return s
}
