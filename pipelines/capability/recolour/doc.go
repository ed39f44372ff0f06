// Package recolour is the garment recolouring capability: it parses a text
// prompt into garments (region, colour, pattern; Parse), finds the garment
// regions of a person photo with the perception models (pose, person
// segmentation, skin/clothes/hair parsing; FindRegions), and recolours and
// re-textures them keeping the photo's own shading and folds
// (DressRegions, Dress). GarmentMask is the region a generative stage
// repaints for a request.
//
// The prompt-tryon and model-create pipelines call it; it imports no model
// pipeline.
package recolour
