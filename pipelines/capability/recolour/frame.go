package recolour

import (
	"fashiond/perception"
	"fashiond/pipelines/capability/raster"
)

// Body-frame tuning for head-and-shoulders photos, in face-box heights
// (fh) and widths (fw) of the detected face. An upright adult's shoulder
// joints sit about a third of a face below the chin and about a face
// width either side of the face's centre, and the waistband about 2.3 face
// heights below the chin (the face box runs from the brow to the chin).
const (
	// shoulderBandBelowChin: the pose's shoulders are taken to lie inside
	// the face (the skeleton is wrong) when their midpoint is above the
	// face box's bottom less this share of its height.
	shoulderBandBelowChin = 0.25
	// faceShoulderWidth: the shoulder width is this many face widths.
	faceShoulderWidth = 2.0
	// faceTorsoLength: the shoulder-to-waist length in face heights.
	faceTorsoLength = 2.0
	// faceWaistBelowChin: the waist is this many face heights below the chin.
	faceWaistBelowChin = 2.3
	// faceZoneRadius: the face zone is a disc of this share of the face
	// box's larger side around its centre.
	faceZoneRadius = 0.55
	// waistInFrame: a waist below this share of the image height is out of
	// the frame (the photo shows the top only).
	waistInFrame = 0.97
)

// frame sets the body frame (waist, torso axis, scale) and returns the
// hands, face and shoe zones' shapes. The pose gives them, unless its
// skeleton is shrunk into a detected face (face, from faceOverShoulders),
// as the pose model does on head-and-shoulders crops: it fits a whole
// small body inside the face, "shoulders" at the eyes and "hips" at the
// mouth, which would put the waist above the top. Then the face box gives
// them and no hand or shoe zone is known.
func (r *Regions) frame(pose *perception.Pose, face *perception.Face, core *raster.Plane) zones {
	if face != nil {
		r.faceGeometry(face)
		return faceZones(face)
	}
	r.geometry(pose, core)
	return zoneShapes(pose, r.shoulder, r.hipsFromPose)
}

// FramedByFace says whether the body frame came from the face because the
// pose model's skeleton lay inside the face (see frame).
func (r *Regions) FramedByFace() bool { return r.faceFramed }

// faceOverShoulders returns the detected face the pose's shoulders fall in
// (above its lowest shoulderBandBelowChin), or nil when the pose's
// shoulders are below every face, as on any upright person.
func faceOverShoulders(pose *perception.Pose, faces []perception.Face) *perception.Face {
	ls, rs := pose.Keypoints[perception.KpLeftShoulder], pose.Keypoints[perception.KpRightShoulder]
	x, y := (ls.X+rs.X)/2, (ls.Y+rs.Y)/2
	for i := range faces {
		b := faces[i].Box
		if x >= b[0] && x <= b[2] && y >= b[1] && y < b[3]-shoulderBandBelowChin*(b[3]-b[1]) {
			return &faces[i]
		}
	}
	return nil
}

// faceGeometry derives the body frame from face f for an upright person:
// the torso axis vertical, the shoulders and the waist at the proportions
// above. A waist below the frame makes every garment in view the top.
func (r *Regions) faceGeometry(f *perception.Face) {
	b := f.Box
	fw, fh := b[2]-b[0], b[3]-b[1]
	r.faceFramed, r.faceBox = true, b
	r.upX, r.upY = 0, -1
	r.shoulder = faceShoulderWidth * fw
	r.torso = faceTorsoLength * fh
	r.waistX, r.waistY = (b[0]+b[2])/2, b[3]+faceWaistBelowChin*fh
	r.hipsFromPose = false
	r.hipsInFrame = r.waistY < float64(r.h)*waistInFrame
}

// faceZones is the face zone of face f: a disc around its box's centre.
func faceZones(f *perception.Face) zones {
	b := f.Box
	return zones{hf: []zoneDisc{{(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, faceZoneRadius * max(b[2]-b[0], b[3]-b[1])}}}
}
