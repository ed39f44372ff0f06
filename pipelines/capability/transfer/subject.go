package transfer

import (
	"context"
	"errors"
	"fmt"
	"image"
	"strings"

	"fashiond/perception"
	"fashiond/pipelines"
	bodypkg "fashiond/pipelines/capability/body"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/raster"
	"fashiond/pipelines/capability/selfcheck"
)

// The transfer on a chosen subject: a photo's people are analysed (package
// body), the subject is chosen by body's rule, the garment is placed on
// the subject's crop, and the result is put back confined to the subject's
// region and blend band, so that other people and the rest of the frame
// stay pixel-identical. The tryon and product-to-model pipelines dress
// their person photo this way.

// jobField is the photo name the transfer's own job errors use; Subject
// rewrites it to the caller's photo name.
const jobField = "personImage"

// Subject is a person photo with its chosen subject.
type Subject struct {
	// Img is the whole photo, origin (0,0).
	Img *image.RGBA
	// Analysis is every person in Img and the chosen subject.
	Analysis *bodypkg.Analysis
	// Crop is the working crop around the subject (Analysis.CropRect).
	Crop image.Rectangle
	// Alpha is how much of an edit may show at each pixel of Img
	// (Analysis.EditAlpha).
	Alpha *image.Gray
	// Photo names the photo in job errors: a job field ("personImage",
	// "modelImageUrl") or words ("the preset model photo woman-1").
	Photo string
}

// FindSubject analyses the people in img and chooses the subject. A photo
// without any person is a job error naming photo.
func FindSubject(ctx context.Context, p perception.Perception, img image.Image, photo string) (*Subject, error) {
	rgba := raster.RGBA(img)
	a, err := bodypkg.Analyze(ctx, p, rgba)
	if errors.Is(err, bodypkg.ErrNoPerson) {
		return nil, pipelines.Failf("no person found in %s: %v", photo, err)
	}
	if err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	return &Subject{Img: rgba, Analysis: a, Crop: a.CropRect(), Alpha: a.EditAlpha(), Photo: photo}, nil
}

// Face is the subject's detected face (nil when none was seen).
func (s *Subject) Face() *perception.Face { return s.Analysis.SubjectPerson().Face }

// CropImage is the pixels of the subject's crop, origin (0,0).
func (s *Subject) CropImage() *image.RGBA { return bodypkg.Crop(s.Img, s.Crop) }

// Transfer puts g on the subject's crop (Transfer); the result has the
// crop's size. Job errors name s.Photo (Explain).
func (s *Subject) Transfer(ctx context.Context, p perception.Perception, g *garment.Garment, o Options) (*image.RGBA, *TransferInfo, error) {
	out, info, err := Transfer(ctx, p, s.CropImage(), g, o)
	if err != nil {
		return nil, nil, s.Explain(err)
	}
	return out, info, nil
}

// TryOnRegion is the region a try-on model repaints on the subject's crop
// (info.TryOnRegion with the subject's face, in the crop's coordinates).
func (s *Subject) TryOnRegion(info *TransferInfo) *image.Gray {
	return info.TryOnRegion(s.Face(), s.Crop.Min)
}

// FrameLayer is a crop-sized mask (info.Layer, a try-on region) placed in
// the photo's coordinates: it shares m's pixels, its Rect moved by the
// crop's corner (nil for nil).
func (s *Subject) FrameLayer(m *image.Gray) *image.Gray {
	if m == nil {
		return nil
	}
	return &image.Gray{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect.Add(s.Crop.Min)}
}

// Place puts an edited crop back into the photo, confined to the subject's
// region and blend band (body.ConfineCrop), keeps the photo's transparency
// (keepTransparency), and measures the result: changed_outside_subject,
// then, when the subject's face was seen, face_region_change and
// face_found.
func (s *Subject) Place(ctx context.Context, p perception.Perception, crop image.Image) (*image.RGBA, []pipelines.Check, error) {
	final := bodypkg.ConfineCrop(s.Img, crop, s.Crop, s.Alpha)
	keepTransparency(s.Img, final)
	checks := []pipelines.Check{selfcheck.ChangedOutsideSubject(s.Img, final, s.Analysis)}
	if f := s.Face(); f != nil {
		found, err := selfcheck.FaceFound(ctx, p, final, *f)
		if err != nil {
			return nil, nil, fmt.Errorf("subject: %w", err)
		}
		checks = append(checks, selfcheck.FaceChange(s.Img, final, *f), found)
	}
	return final, checks, nil
}

// Note says which person was dressed when the photo shows several ("" for
// one person).
func (s *Subject) Note() string {
	if len(s.Analysis.People) < 2 {
		return ""
	}
	return fmt.Sprintf("subject: %s; the other people and the rest of the photo are unchanged", s.Analysis.Rule)
}

// Explain rewrites the transfer's job errors for s.Photo: the transfer
// names its photo personImage, and says "no person found" where the
// subject was found (a face) but its body cannot take a garment. Other
// errors are returned as they are.
func (s *Subject) Explain(err error) error {
	var pe *pipelines.Error
	if !errors.As(err, &pe) {
		return err
	}
	const none = "no person found"
	if strings.HasPrefix(pe.Msg, none) && len(s.Analysis.Faces) > 0 {
		why := strings.TrimPrefix(strings.TrimPrefix(pe.Msg, none+" in "+jobField), ": ")
		return &pipelines.Error{Msg: fmt.Sprintf("%s: the subject (%s) was found but its body cannot take a garment: %s", s.Photo, s.Analysis.Rule, why),
			Transient: pe.Transient, Err: pe.Err}
	}
	if s.Photo == jobField || !strings.Contains(pe.Msg, jobField) {
		return err
	}
	return &pipelines.Error{Msg: strings.ReplaceAll(pe.Msg, jobField, s.Photo), Transient: pe.Transient, Err: pe.Err}
}

// keepTransparency gives every pixel of out (premultiplied, orig's size)
// orig's alpha, its colour scaled alike: a garment edit never makes a
// transparent pixel of a cut-out photo visible. The transfer sees the
// transparent background as black, and without this the blend band round
// the subject turned it into a black halo (codait_man_tpose_cutout.png).
// A garment wider than a cut-out person is clipped to the person.
func keepTransparency(orig, out *image.RGBA) {
	if len(orig.Pix) != len(out.Pix) || orig.Opaque() {
		return
	}
	for i := 3; i < len(out.Pix); i += 4 {
		oa, ea := orig.Pix[i], out.Pix[i]
		if oa == ea {
			continue
		}
		for c := i - 3; c < i; c++ {
			v := 0
			if ea > 0 {
				v = (int(out.Pix[c])*int(oa) + int(ea)/2) / int(ea)
			}
			out.Pix[c] = uint8(min(v, int(oa)))
		}
		out.Pix[i] = oa
	}
}
