package producttomodel

import (
	"fmt"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
	"fashiond/pipelines/capability/garment"
	"fashiond/pipelines/capability/presets"
	"fashiond/spec"
)

// TestEveryPresetDressesEveryGarment verifies the preset library offline:
// every dressable built-in preset, alone in a library (so that no other
// preset can stand in for it), is dressed with every shared garment of a
// kind it may be drawn for (tops on full-body and upper-body presets,
// trousers on full-body ones), the runs cycling through every ratio and
// every style so that each preset meets each of them; every job must
// succeed with every check passing (but a short-sleeved top on
// woman-standing-grass: tornArm). Before, "a woman walking in a park",
// studio, 4:5 with the red tee failed face_similarity 0 on
// woman-standing-grass (the only female full-body preset).
func TestEveryPresetDressesEveryGarment(t *testing.T) {
	if testing.Short() {
		t.Skip("dresses every preset about a dozen times")
	}
	full := library(t)
	garments := []struct{ file, kind string }{
		{"flatlay_tee_red.png", garment.KindTop}, {"flatlay_tee_navy_stripes.png", garment.KindTop},
		{"flatlay_longsleeve_green.png", garment.KindTop}, {"tee_white_ghost.png", garment.KindTop},
		{"flatlay_trousers_khaki.png", garment.KindBottom},
	}
	runs := max(len(spec.Ratios), len(spec.StyleIDs))
	for _, p := range full.All() {
		if p.NotDressable != "" || p.Framing == presets.Face {
			continue
		}
		lib := subLibrary(t, full, p.ID)
		var fit []string
		for _, g := range garments {
			for _, f := range framings(g.kind) {
				if f == p.Framing {
					fit = append(fit, g.file)
				}
			}
		}
		for i := range runs {
			g := fit[i%len(fit)]
			ratio, sid := spec.Ratios[i%len(spec.Ratios)], spec.StyleIDs[i%len(spec.StyleIDs)]
			t.Run(fmt.Sprintf("%s/%s/%s/%s", p.ID, g, ratio, sid), func(t *testing.T) {
				res, err := run(t, lib, Inputs{ProductImage: "file:garments/" + g, Ratio: ratio, StyleID: sid, Quality: "1k", SampleCount: 1})
				if tornArm(p.ID, g) {
					pipelinetest.WantJobError(t, err, "product-to-model: self-check arm_painted failed: ")
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res.Outputs[0].Checks {
					if !c.Pass {
						t.Errorf("check %s failed: %+v", c.Name, c)
					}
				}
			})
		}
	}
}

// tornArm says whether the short-sleeved top g leaves preset id's long
// sleeve over an arm to a fill: woman-standing-grass's hoodie sleeve over
// the arm reaching across the dog, painted a blurred skin band with the
// hand floating at its end (arm_painted 0.37-0.42 with the three tees, the
// long-sleeve 0.0027). The classical path cannot draw a bare arm, so the
// job is refused alone; on the full library the next preset is dressed
// (TestFlatLayOnlyEveryGarment).
func tornArm(id, g string) bool {
	return id == "woman-standing-grass" && g != "flatlay_longsleeve_green.png" && g != "flatlay_trousers_khaki.png"
}

// TestWomanWalkingInAPark is the issue's request: a flat-lay top, "a
// woman walking in a park", studio, 4:5, no modelImageUrl (the issue's red
// tee leaves her long-sleeved arm to a fill, arm_painted, and a male
// preset is dressed: TestFlatLayOnlyEveryGarment; the green long-sleeve
// covers it). The only
// female dressable preset is woman-standing-grass (hugging a Great Dane);
// framed at 4:5 the face detector also takes the dog's head for a face
// (larger, on the person mask), and the studio look's face check followed
// the dog: the job failed face_similarity 0. Now the dog's face has no
// pose whose eyes lie on it, the woman is the subject, the job succeeds,
// and the notes say that the photo shows a dog nobody asked for and that
// no preset is walking.
func TestWomanWalkingInAPark(t *testing.T) {
	res, err := run(t, library(t), Inputs{ProductImage: "file:garments/flatlay_longsleeve_green.png", CustomPrompt: "a woman walking in a park", StyleID: "studio", Ratio: "4:5", Quality: "1k", SampleCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outputs[0]
	notes := strings.Join(o.Notes, " | ")
	for _, want := range []string{"preset woman-standing-grass", "shows a dog", `not "walking" as asked`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
	for _, c := range o.Checks {
		if !c.Pass {
			t.Errorf("check %s failed: %+v", c.Name, c)
		}
	}
}
