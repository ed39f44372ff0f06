package pipelines

import "fashiond/spec"

// The normalised job inputs each pipeline decodes are defined once, in
// package spec (with the rules that produce them); these aliases keep the
// pipelines' names.
type (
	PromptTryOnInputs     = spec.PromptTryOnInputs
	PoseControlInputs     = spec.PoseControlInputs
	Pose                  = spec.Pose
	ModelCreateInputs     = spec.ModelCreateInputs
	ProductToModelInputs  = spec.ProductToModelInputs
	AngleGenerationInputs = spec.AngleGenerationInputs
	TryOnInputs           = spec.TryOnInputs
	ImageToVideoInputs    = spec.ImageToVideoInputs
)
