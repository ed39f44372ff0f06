package api

import (
	"net/http"
	"slices"
)

// Model names of the interface spec, in the spec's order.
const (
	ModelPromptTryOn     = "prompt-tryon"
	ModelPoseControl     = "pose-control"
	ModelModelCreate     = "model-create"
	ModelProductToModel  = "product-to-model"
	ModelAngleGeneration = "angle-generation"
	ModelTryOn           = "tryon"
	ModelImageToVideo    = "image-to-video"
)

// ModelNames lists the seven model names in the spec's order.
var ModelNames = []string{
	ModelPromptTryOn, ModelPoseControl, ModelModelCreate, ModelProductToModel,
	ModelAngleGeneration, ModelTryOn, ModelImageToVideo,
}

// Shared value sets of the spec.
var (
	Qualities         = []string{"1k", "2k", "4k"}
	Ratios            = []string{"1:1", "3:4", "4:3", "9:16", "16:9", "2:3", "3:2", "4:5", "5:4", "21:9"}
	VideoAspectRatios = []string{"16:9", "9:16"}
	StyleIDs          = []string{"y2k", "studio", "iphone", "professional", "lifestyle", "analog", "streetwear", "flash", "movie", "minimalist", "ugc", "editorial"}
	AngleIDs          = []string{"front", "back", "leftSide", "rightSide", "left45", "right45"}
	Accuracies        = []string{"standard", "high", "hyper"}
	ModelCreateTypes  = []string{"generate", "upload"}
	PoseTypes         = []string{"template", "custom"}
	VideoDurations    = []int{4, 6, 8}
)

// Limits: the spec's, and this service's choices where the spec says
// "not shown" (documented in README_API.md).
const (
	MaxSampleCount     = 4    // spec: prompt-tryon, product-to-model, tryon; chosen for model-create
	MaxPoses           = 8    // chosen (spec: not shown)
	MaxAngles          = 6    // chosen: the six angle ids, no duplicates
	MaxCustomPrompt    = 500  // spec: product-to-model customPrompt, in characters (runes)
	MaxPromptChars     = 2000 // chosen: prompt-tryon prompt, model-create prompt, image-to-video prompt
	MaxShortTextChars  = 500  // chosen: gender, bodyType, clothing, pose, custom pose text
	MaxNameChars       = 200  // chosen: model-create name, pose title
	MaxIDChars         = 128  // chosen: faceModelId, poseModelId
	DefaultMaxBodySize = 100 << 20
)

// QualityCredits is the per-image price of a quality tier.
var QualityCredits = map[string]int{"1k": 1, "2k": 3, "4k": 5}

// VideoCredits is the price of a video by duration in seconds.
var VideoCredits = map[int]int{4: 6, 6: 9, 8: 12}

// SubmitStatus is the HTTP status of an accepted POST /v1/run for model:
// 200 for prompt-tryon, tryon and image-to-video, 201 for the others.
func SubmitStatus(model string) int {
	switch model {
	case ModelPromptTryOn, ModelTryOn, ModelImageToVideo:
		return http.StatusOK
	}
	return http.StatusCreated
}

// Lifecycle is the spec's lifecycle label of a model: "experimental" for
// image-to-video, "stable" for the others, "" for unknown names.
func Lifecycle(model string) string {
	switch {
	case model == ModelImageToVideo:
		return "experimental"
	case slices.Contains(ModelNames, model):
		return "stable"
	}
	return ""
}
