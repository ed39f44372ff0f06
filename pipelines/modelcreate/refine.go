package modelcreate

import (
	"context"
	"fmt"
	"image"
	"math"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/generative"
	"fashiond/pipelines/capability/mask"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/repose"
	"fashiond/pipelines/capability/scene"
	"fashiond/pipelines/capability/selfcheck"
)

// The img2img stages of "generate", with an installed refiner:
//   - a sample re-posed to a reference pose (poseModelId or
//     poseImageBase64) is redrawn from the classically re-posed image at
//     poseStrength, inside the re-posed person and the region the person
//     uncovered (grown by poseMarginFrac of the diagonal): the warp's
//     stretched limbs and the plate's fill are re-rendered while the pose
//     holds; pose_agreement and the classical re-pose's own checks
//     (reposeChecks: repose.IntegrityChecks and duplicated_head) run on
//     the result, so a pass that still shows the re-pose's tears or smears
//     is refused. The checks read from the re-pose's silhouette and
//     target (largest_tear, largest_torn_hole, limb_width, person_pieces,
//     frame_cut, hand_out_of_frame, carried_background) keep their
//     classical values: a pass this light redraws the pixels, not the
//     silhouette, so a re-pose torn in its silhouette stays refused
//     whatever the model draws; the others (largest_hole, ghost_smear,
//     hand_left_behind, duplicated_head) read the redrawn pixels;
//   - a transferred face (faceModelId) has its border redrawn at
//     faceBorderStrength: a ring from ringFrac of the face mask's width
//     inside its edge to ringFrac outside, so the seam between the
//     transferred face and the base model's head is re-rendered while the
//     face itself is kept; face_similarity and largest_hole run on it.
//
// A refined image that fails a check is not used: the classical one is
// kept and a note names the check.
const (
	poseStrength       = 0.35
	faceBorderStrength = 0.25
	poseMarginFrac     = 0.006
	ringFrac           = 0.12
	faceBorderPrompt   = "a natural photo of a person's face, seamless skin, even lighting, sharp focus"
	faceBorderNegative = "seam, visible edge, mask, blurry, deformed, text, watermark"
	// faceSeedSalt separates the face-border pass's seed from the pose
	// pass's.
	faceSeedSalt = 0x5eed_face
)

// WithRefiner makes "generate" redraw re-posed samples and the border of
// transferred faces with an installed img2img model (nil keeps the
// classical results).
func (pl *Pipeline) WithRefiner(r generative.Refiner) *Pipeline {
	pl.ref = r
	return pl
}

// refined is the outcome of one img2img stage.
type refined struct {
	img    *image.RGBA
	step   string // the method's step ("" when not used)
	note   string
	checks []pipelines.Check
}

// posePrompt describes the model photo being re-posed.
func posePrompt(in Inputs) string {
	p := "a fashion photo of one person: " + who(in)
	if c := in.Clothing; c != "" {
		p += "; wearing " + c
	}
	return p + "; natural body, hands and clothing folds, photographic, soft natural light, sharp focus"
}

// refinePose redraws a re-posed sample (see the package's img2img
// stages). sc is the scene before re-posing, r the classical result.
func (pl *Pipeline) refinePose(ctx context.Context, in Inputs, sc *scene.Scene, r *repose.Rendered, seed uint64) (refined, error) {
	b := r.Image.Rect
	region := image.NewGray(b)
	for i := range region.Pix {
		if r.Alpha.Pix[i] >= 128 || sc.PersonMask.Pix[i] >= 128 {
			region.Pix[i] = 255
		}
	}
	region = mask.Dilate(region, poseMarginFrac*math.Hypot(float64(b.Dx()), float64(b.Dy())))
	out, info, err := pl.ref.Refine(ctx, r.Image, region, generative.Prompt{Text: posePrompt(in), Negative: generative.PersonNegative, Seed: seed, Strength: poseStrength})
	if err != nil {
		return refined{}, pipelines.Transientf("model-create: img2img over the re-posed image: %v", err)
	}
	img := raster.RGBA(out)
	source := repose.SkeletonFromPose(sc.Pose, b.Dx(), b.Dy())
	agree, err := repose.PoseAgreement(ctx, pl.p, img, nil, 0, source, r.Target)
	if err != nil {
		return refined{}, jobErr(ctx, err)
	}
	integrity, err := pl.reposeChecks(ctx, sc, r, img)
	if err != nil {
		return refined{}, err
	}
	checks := append([]pipelines.Check{agree}, integrity...)
	return judged(img, checks, info, fmt.Sprintf("img2img(%s, strength %g)", info.Model, poseStrength),
		"the re-posed person and the background it uncovered were", "the img2img pass over the re-posed image"), nil
}

// refineFaceBorder redraws the ring around a transferred face; face is
// the transferred face's inner-face mask on img.
func (pl *Pipeline) refineFaceBorder(ctx context.Context, img *image.RGBA, face *image.Gray, seed uint64) (refined, error) {
	box := scene.MaskBounds(face, 128)
	if box.Empty() {
		return refined{}, nil
	}
	r := ringFrac * float64(box.Dx())
	ring := mask.Dilate(face, r)
	inner := mask.Erode(face, r)
	for i, v := range inner.Pix {
		if v >= 128 {
			ring.Pix[i] = 0
		}
	}
	faces, err := pl.p.Faces(ctx, img)
	if err != nil {
		return refined{}, jobErr(ctx, err)
	}
	if len(faces) == 0 {
		return refined{note: "the face border was not redrawn: no face is detected after the transfer"}, nil
	}
	out, info, err := pl.ref.Refine(ctx, img, ring, generative.Prompt{Text: faceBorderPrompt, Negative: faceBorderNegative, Seed: seed, Strength: faceBorderStrength})
	if err != nil {
		return refined{}, pipelines.Transientf("model-create: face border inpainting: %v", err)
	}
	res := raster.RGBA(out)
	found, err := selfcheck.FaceFound(ctx, pl.p, res, faces[0])
	if err != nil {
		return refined{}, jobErr(ctx, err)
	}
	checks := []pipelines.Check{found, selfcheck.Hole(img, res)}
	return judged(res, checks, info, fmt.Sprintf("face-border(%s, strength %g)", info.Model, faceBorderStrength),
		"the border of the transferred face was", "the face-border pass"), nil
}

// judged keeps a refined image when every check passes, else says which
// failed.
func judged(img *image.RGBA, checks []pipelines.Check, info generative.Info, step, what, stage string) refined {
	if c, ok := pipelines.FirstFailed(checks); ok {
		return refined{note: fmt.Sprintf("%s by the installed model %q failed the self-check %s (%g, limit %g %s): the classical result is kept", stage, info.Model, c.Name, c.Value, c.Limit, c.Bound)}
	}
	return refined{img: img, step: step, note: info.Note(what), checks: checks}
}

// use applies a refined stage to a sample: its image, method step, note
// and checks. It reports whether the refined image was used.
func (rf refined) use(img *image.RGBA, steps, notes *[]string, checks *[]pipelines.Check) (*image.RGBA, bool) {
	if rf.note != "" {
		*notes = append(*notes, rf.note)
	}
	if rf.img == nil {
		return img, false
	}
	*steps = append(*steps, rf.step)
	*checks = append(*checks, rf.checks...)
	return rf.img, true
}
