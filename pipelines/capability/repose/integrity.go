package repose

import (
	"fmt"
	"image"

	"fashiond/perception"
	"fashiond/pipelines"
	"fashiond/pipelines/capability/selfcheck"
)

// IntegrityChecks are the checks of a re-posed person as the output out
// shows it (src the photo, was its person mask, source the photo's
// skeleton, r the re-pose; all one size): largest_hole, largest_tear,
// largest_torn_hole, the body-integrity checks (limb_width,
// person_pieces, ghost_smear), hand_left_behind, hand_out_of_frame,
// frame_cut and carried_background. pose-control and model-create's
// re-pose both run them, so a damaged re-pose is refused by either.
func IntegrityChecks(src, out *image.RGBA, was *image.Gray, source Skeleton, r *Rendered) []pipelines.Check {
	bones := integrityBones(source, r.Target)
	arms := forearmBones(bones)
	checks := []pipelines.Check{selfcheck.Hole(src, out), selfcheck.Tear(out, was, r.Alpha), selfcheck.TornHole(was, r.Alpha)}
	checks = append(checks, selfcheck.BodyIntegrity(src, out, was, r.Alpha, bones)...)
	return append(checks,
		selfcheck.HandLeftBehind(src, out, was, arms),
		selfcheck.HandOutOfFrame(src.Rect.Dx(), src.Rect.Dy(), arms),
		selfcheck.FrameCut(was, r.Alpha),
		CarriedBackgroundCheck(r))
}

// integrityBones are the limb bones (upper arms, forearms, thighs, shins)
// known on both the source and the target skeleton.
func integrityBones(source, target Skeleton) []selfcheck.Bone {
	var out []selfcheck.Bone
	for _, b := range limbBones {
		if source.Known[b[0]] && source.Known[b[1]] && target.Known[b[0]] && target.Known[b[1]] {
			out = append(out, selfcheck.Bone{Name: fmt.Sprintf("%d-%d", b[0], b[1]),
				Src: [2]perception.Point{source.Joints[b[0]], source.Joints[b[1]]}, Out: [2]perception.Point{target.Joints[b[0]], target.Joints[b[1]]}})
		}
	}
	return out
}

// forearmBones are the forearm bones (elbow to wrist) among bones.
func forearmBones(bones []selfcheck.Bone) []selfcheck.Bone {
	var out []selfcheck.Bone
	for _, b := range bones {
		if b.Name == "13-15" || b.Name == "14-16" {
			out = append(out, b)
		}
	}
	return out
}
