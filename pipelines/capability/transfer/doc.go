// Package transfer is the garment transfer capability: it puts an analysed
// garment (package garment) on the person of a photo. The person's pose,
// person mask and skin/clothes/hair parsing come from the perception
// models; the garment is warped onto the body (affine torso and
// piecewise-affine sleeves for standard; thin-plate splines for high;
// thin-plate splines at 2x2 supersampling plus fold shading transfer and
// softer edges for hyper), laid behind arms, hands, hair and face, and the
// part of the old garment it does not cover is inpainted. The output has
// the person image's size.
//
// The tryon and product-to-model pipelines call it; it imports no model
// pipeline.
package transfer
