// Package perception holds the model catalogue (one manifest per model), its
// verification, and one typed adapter per model family that turns Go images
// into tensors and outputs into Go values. It imports inference, never gocv.
package perception

import (
	"context"
	"fmt"
	"image"
	"math"
	"strconv"
	"strings"

	"fashiond/spec"
)

// Point is a position in image pixels.
type Point struct{ X, Y float64 }

// Keypoint is one BlazePose joint in original image pixels.
type Keypoint struct {
	X, Y, Z    float64
	Visibility float64 // 0..1 (sigmoid applied)
	Presence   float64 // 0..1 (sigmoid applied)
}

// BlazePose joint indices used across pipelines.
const (
	KpNose          = 0
	KpLeftEye       = 2
	KpRightEye      = 5
	KpLeftEar       = 7
	KpRightEar      = 8
	KpLeftShoulder  = 11
	KpRightShoulder = 12
	KpLeftElbow     = 13
	KpRightElbow    = 14
	KpLeftWrist     = 15
	KpRightWrist    = 16
	KpLeftHip       = 23
	KpRightHip      = 24
	KpLeftKnee      = 25
	KpRightKnee     = 26
	KpLeftAnkle     = 27
	KpRightAnkle    = 28
)

// Pose is the result of the pose model on one image.
type Pose struct {
	Keypoints [33]Keypoint
	Presence  float64     // person presence 0..1
	Mask      *image.Gray // the pose model's person mask at the input resolution
}

// Parsing holds the skin/clothes/hair probability masks at input resolution.
type Parsing struct {
	Skin, Clothes, Hair *image.Gray
}

// Face is one detected face.
type Face struct {
	Box       [4]float64 // x0, y0, x1, y1 in image pixels
	Landmarks [5]Point   // right eye, left eye, nose tip, right and left mouth corner
	Score     float64
	// Source is the detector that found the face ("yunet" or "ultraface_rfb320").
	Source string
	// LandmarksEstimated is true when the detector has no landmark head
	// (the UltraFace fallback): Landmarks are then average frontal-face
	// positions inside Box, not measurements.
	LandmarksEstimated bool
}

// Depth is a relative inverse depth map, min-max normalised to 0..1 (1 = nearest),
// at the input image's resolution.
type Depth struct {
	W, H int
	Data []float32
}

// At returns the depth at integer pixel (x, y), clamped to the image.
func (d *Depth) At(x, y int) float32 {
	x = min(max(x, 0), d.W-1)
	y = min(max(y, 0), d.H-1)
	return d.Data[y*d.W+x]
}

// SRModel selects a super-resolution model.
type SRModel string

const (
	SRFast    SRModel = "realesr_general_x4v3"
	SRQuality SRModel = "realesrgan_x4plus"
)

// Perception is what pipelines use from the models: implemented by *Suite.
type Perception interface {
	// Pose runs BlazePose (full) on one image; keypoints in original pixels.
	Pose(ctx context.Context, img image.Image) (*Pose, error)
	// PersonMask runs the selfie segmentation model; mask at input size.
	PersonMask(ctx context.Context, img image.Image) (*image.Gray, error)
	// Parse runs the skin/clothes/hair model; masks at input size.
	Parse(ctx context.Context, img image.Image) (*Parsing, error)
	// Faces detects faces with landmarks (YuNet, UltraFace fallback), best first.
	Faces(ctx context.Context, img image.Image) ([]Face, error)
	// Depth estimates relative depth at input size. Returns an error naming the
	// model when the optional depth model is not installed.
	Depth(ctx context.Context, img image.Image) (*Depth, error)
	// SuperResolve upscales x4 with the given model (tiled, any size).
	SuperResolve(ctx context.Context, img image.Image, m SRModel) (image.Image, error)
	// ToTier produces exactly TierSize(tier, ratio) pixels: centre-crop to the
	// ratio, then super-resolution and/or Lanczos per the upscale policy.
	ToTier(ctx context.Context, img image.Image, tier, ratio string) (image.Image, error)
}

// TierPixels is the target pixel count of a quality tier: 1k = 1 MP,
// 2k = 4 MP, 4k = 16 MP (decimal megapixels).
func TierPixels(tier string) (int, error) {
	switch tier {
	case "", "1k":
		return 1_000_000, nil
	case "2k":
		return 4_000_000, nil
	case "4k":
		return 16_000_000, nil
	}
	return 0, fmt.Errorf("unknown quality tier %q (want 1k, 2k or 4k)", tier)
}

// ParseRatio parses "a:b".
func ParseRatio(ratio string) (a, b int, err error) {
	l, r, ok := strings.Cut(ratio, ":")
	if ok {
		a, err = strconv.Atoi(l)
		if err == nil {
			b, err = strconv.Atoi(r)
		}
	}
	if !ok || err != nil || a <= 0 || b <= 0 {
		return 0, 0, fmt.Errorf("bad ratio %q (want a:b)", ratio)
	}
	return a, b, nil
}

// TierSize is the exact output size for a tier and ratio: width:height is
// exactly a:b and the pixel count is within 1% of TierPixels.
func TierSize(tier, ratio string) (w, h int, err error) {
	px, err := TierPixels(tier)
	if err != nil {
		return 0, 0, err
	}
	a, b, err := ParseRatio(ratio)
	if err != nil {
		return 0, 0, err
	}
	g := gcd(a, b)
	a, b = a/g, b/g
	k := int(math.Round(math.Sqrt(float64(px) / float64(a*b))))
	return a * k, b * k, nil
}

// RatioOf returns the spec ratio closest to the image's aspect.
func RatioOf(w, h int) string {
	best, bestErr := "1:1", math.Inf(1)
	for _, r := range spec.Ratios {
		a, b, _ := ParseRatio(r)
		e := math.Abs(math.Log(float64(w)/float64(h)) - math.Log(float64(a)/float64(b)))
		if e < bestErr {
			best, bestErr = r, e
		}
	}
	return best
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
