package api

import (
	"fashiond/spec"
)

// The spec's names, value sets, limits and prices, read from package spec
// (their one home) under the names the API has always used.

// Model names of the interface spec.
const (
	ModelPromptTryOn     = spec.ModelPromptTryOn
	ModelPoseControl     = spec.ModelPoseControl
	ModelModelCreate     = spec.ModelModelCreate
	ModelProductToModel  = spec.ModelProductToModel
	ModelAngleGeneration = spec.ModelAngleGeneration
	ModelTryOn           = spec.ModelTryOn
	ModelImageToVideo    = spec.ModelImageToVideo
)

// ModelNames lists the seven model names in the spec's order.
var ModelNames = spec.ModelNames

// Shared value sets of the spec.
var (
	Qualities         = spec.Qualities
	Ratios            = spec.Ratios
	VideoAspectRatios = spec.VideoAspectRatios
	StyleIDs          = spec.StyleIDs
	AngleIDs          = spec.AngleIDs
	Accuracies        = spec.Accuracies
	ModelCreateTypes  = spec.ModelCreateTypes
	PoseTypes         = spec.PoseTypes
	VideoDurations    = spec.VideoDurations
)

// Limits (see package spec for which are the spec's and which are this
// service's choices).
const (
	MaxSampleCount     = spec.MaxSampleCount
	MaxPoses           = spec.MaxPoses
	MaxAngles          = spec.MaxAngles
	MaxCustomPrompt    = spec.MaxCustomPrompt
	MaxPromptChars     = spec.MaxPromptChars
	MaxShortTextChars  = spec.MaxShortTextChars
	MaxNameChars       = spec.MaxNameChars
	MaxIDChars         = spec.MaxIDChars
	DefaultMaxBodySize = 100 << 20
)

// QualityCredits is the per-image price of a quality tier.
var QualityCredits = spec.QualityCredits

// VideoCredits is the price of a video by duration in seconds.
var VideoCredits = spec.VideoCredits

// SubmitStatus is the HTTP status of an accepted POST /v1/run for model:
// 200 for prompt-tryon, tryon and image-to-video, 201 for the others.
func SubmitStatus(model string) int { return spec.SubmitStatus(model) }

// Lifecycle is the spec's lifecycle label of a model: "experimental" for
// image-to-video, "stable" for the others, "" for unknown names.
func Lifecycle(model string) string { return spec.Lifecycle(model) }
