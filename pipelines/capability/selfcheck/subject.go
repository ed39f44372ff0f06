package selfcheck

import (
	"image"

	"fashiond/pipelines"
	"fashiond/pipelines/capability/body"
)

// ChangedOutsideSubject measures changed_outside_subject against the
// subject's own mask from the person analysis a of orig, not against the
// alpha a stage confined its edit with: every pixel of the whole frame
// outside the subject's region and blend band counts, and so does every
// pixel of another person's region even inside the band (a neighbour's
// pixels are never the subject's). out must have orig's size (a stage that
// worked on a crop places its result back first); another size counts as
// fully changed.
func ChangedOutsideSubject(orig, out image.Image, a *body.Analysis) pipelines.Check {
	return pipelines.MaxCheck(NameChangedOutside, round4(body.ChangedOutside(orig, out, OwnAlpha(a), ChangeTol)), MaxChangedOutside)
}

// OwnAlpha is the subject's own mask with its blend band (body.BandAlpha),
// 0 on every other person's region where it is not also the subject's:
// the pixels an edit of the subject may change.
func OwnAlpha(a *body.Analysis) *image.Gray {
	own := a.SubjectPerson().Region
	alpha := body.BandAlpha(own, a.Band())
	for i := range a.People {
		if i == a.Subject {
			continue
		}
		for k, v := range a.People[i].Region.Pix {
			if v != 0 && own.Pix[k] == 0 {
				alpha.Pix[k] = 0
			}
		}
	}
	return alpha
}
