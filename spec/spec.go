// Package spec is the one home of the interface specification's rules
// (../shared/spec/interface.md): the seven model names, each model's
// lifecycle label, submit HTTP status and success status word, the shared
// value sets, the limits, every model's input fields with their kinds,
// defaults, value sets and limits (the table in rules.go), the cross-field
// rules, the cost formula and the normalised input types.
//
// Package api interprets the table to validate POST /v1/run (into the typed
// Inputs, decoded once) and to generate its OpenAPI document; package jobs
// reads the names, lifecycle labels and status words, stores the typed
// inputs (Images: their image fields) and hands them to the model's
// pipeline; Cost prices the typed value. A pipeline run directly (CLI,
// tests) gets its defaults from DecodeInputs. spec imports only the
// standard library.
//
// Each sentence of the spec that states a rule has one test named after it
// (TestSpec_SampleCountIsOneToFourDefaultOne, TestSpec_CreditCostSummary,
// ...), and TestSpec_RulesWrittenOnlyHere fails when a model name, value
// set, lifecycle word, sampleCount range or 500-character limit is written
// again outside this package.
package spec

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

// Lifecycle labels of the spec ("Versioning").
const (
	LifecycleStable       = "stable"
	LifecycleExperimental = "experimental"
)

// LifecycleLabels lists the lifecycle labels.
var LifecycleLabels = []string{LifecycleStable, LifecycleExperimental}

// Job status words. The spec names starting, succeeded, success and error;
// canceled is this service's addition (POST /v1/cancel/{id}).
const (
	StatusStarting  = "starting"
	StatusSucceeded = "succeeded" // every model but prompt-tryon
	StatusSuccess   = "success"   // prompt-tryon
	StatusError     = "error"
	StatusCanceled  = "canceled"
)

// StatusWords lists every job status word, the initial one first.
var StatusWords = []string{StatusStarting, StatusSucceeded, StatusSuccess, StatusError, StatusCanceled}

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

// Values of the sets that code branches on.
const (
	DefaultQuality      = "1k"
	PoseTemplate        = "template"
	PoseCustom          = "custom"
	ModelCreateGenerate = "generate"
	ModelCreateUpload   = "upload"
)

// Limits: the spec's, and this service's choices where the spec says "not
// shown" (documented in README_API.md).
const (
	MaxSampleCount    = 4    // spec: prompt-tryon, product-to-model, tryon; chosen for model-create
	MaxPoses          = 8    // chosen (spec: not shown)
	MaxAngles         = 6    // chosen: the six angle ids, no duplicates
	MaxCustomPrompt   = 500  // spec: product-to-model customPrompt, in characters (runes)
	MaxPromptChars    = 2000 // chosen: prompt-tryon, model-create and image-to-video prompt
	MaxShortTextChars = 500  // chosen: gender, bodyType, clothing, pose, custom pose text
	MaxNameChars      = 200  // chosen: model-create name, pose title
	MaxIDChars        = 128  // chosen: faceModelId, poseModelId
	MaxImageBytes     = 25 << 20
)

// QualityCredits is the per-image price of a quality tier.
var QualityCredits = map[string]int{"1k": 1, "2k": 3, "4k": 5}

// VideoCredits is the price of a video by duration in seconds.
var VideoCredits = map[int]int{4: 6, 6: 9, 8: 12}

// Model is one model's entry of the spec.
type Model struct {
	Name       string
	Lifecycle  string // LifecycleStable or LifecycleExperimental
	SubmitCode int    // HTTP status of an accepted POST /v1/run
	Success    string // the status word of a finished job
	Pricing    Pricing
	Inputs     *Object // the input rules (rules.go)
}

// Pricing is a model's cost formula: FlatCredits, or QualityCredits of the
// quality when ByQuality, or VideoCredits of the duration when ByDuration;
// times the count of CountField (an integer field's value or an array
// field's length) when CountField is set.
type Pricing struct {
	ByQuality   bool
	ByDuration  bool
	FlatCredits int
	CountField  string
}

// Table is the spec's model table in the spec's order.
var Table = []Model{
	{ModelPromptTryOn, LifecycleStable, http.StatusOK, StatusSuccess, Pricing{ByQuality: true, CountField: "sampleCount"}, promptTryOnRules},
	{ModelPoseControl, LifecycleStable, http.StatusCreated, StatusSucceeded, Pricing{ByQuality: true, CountField: "poses"}, poseControlRules},
	{ModelModelCreate, LifecycleStable, http.StatusCreated, StatusSucceeded, Pricing{ByQuality: true, CountField: "sampleCount"}, modelCreateRules},
	{ModelProductToModel, LifecycleStable, http.StatusCreated, StatusSucceeded, Pricing{ByQuality: true, CountField: "sampleCount"}, productToModelRules},
	{ModelAngleGeneration, LifecycleStable, http.StatusCreated, StatusSucceeded, Pricing{ByQuality: true, CountField: "angleIds"}, angleGenerationRules},
	{ModelTryOn, LifecycleStable, http.StatusOK, StatusSucceeded, Pricing{FlatCredits: 1, CountField: "sampleCount"}, tryOnRules},
	{ModelImageToVideo, LifecycleExperimental, http.StatusOK, StatusSucceeded, Pricing{ByDuration: true}, imageToVideoRules},
}

// Lookup returns the entry of a model name (false for unknown names).
func Lookup(name string) (*Model, bool) {
	i := slices.IndexFunc(Table, func(m Model) bool { return m.Name == name })
	if i < 0 {
		return nil, false
	}
	return &Table[i], true
}

// Known reports whether name is one of the spec's models.
func Known(name string) bool {
	_, ok := Lookup(name)
	return ok
}

// SubmitStatus is the HTTP status of an accepted POST /v1/run for model:
// 200 for prompt-tryon, tryon and image-to-video, 201 for the others (and
// for unknown names).
func SubmitStatus(model string) int {
	if m, ok := Lookup(model); ok {
		return m.SubmitCode
	}
	return http.StatusCreated
}

// Lifecycle is the spec's lifecycle label of a model: "experimental" for
// image-to-video, "stable" for the others, "" for unknown names.
func Lifecycle(model string) string {
	if m, ok := Lookup(model); ok {
		return m.Lifecycle
	}
	return ""
}

// SuccessStatus is the status word of a finished job of model: "success"
// for prompt-tryon, "succeeded" for every other model.
func SuccessStatus(model string) string {
	if m, ok := Lookup(model); ok {
		return m.Success
	}
	return StatusSucceeded
}
