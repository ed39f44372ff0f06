package api

import "fashiond/pipelines"

// The normalised inputs that Validate produces are defined once, in package
// pipelines, and shared with the workers.
type (
	PromptTryOnInputs     = pipelines.PromptTryOnInputs
	PoseControlInputs     = pipelines.PoseControlInputs
	Pose                  = pipelines.Pose
	ModelCreateInputs     = pipelines.ModelCreateInputs
	ProductToModelInputs  = pipelines.ProductToModelInputs
	AngleGenerationInputs = pipelines.AngleGenerationInputs
	TryOnInputs           = pipelines.TryOnInputs
	ImageToVideoInputs    = pipelines.ImageToVideoInputs
)
