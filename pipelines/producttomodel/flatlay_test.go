package producttomodel

import (
	"fmt"
	"strings"
	"testing"

	"fashiond/spec"
)

// TestFlatLayOnlyEveryGarment is issue 21's acceptance: product-to-model
// with only a flat-lay (no modelImageUrl), with or without a few words, a
// style and a ratio, succeeds for each shared garment on the full preset
// library, every check passing. When the words ask for what no preset
// shows ("a woman walking on a city street": the only female full-body
// preset hugs a Great Dane in a field), a note says why the chosen preset
// was drawn anyway. The red tee on that preset leaves her long-sleeved
// arm to a fill and fails arm_painted; the job then dresses a male preset
// and a note says why.
func TestFlatLayOnlyEveryGarment(t *testing.T) {
	if testing.Short() {
		t.Skip("ten product-to-model jobs on the CPU")
	}
	lib := library(t)
	garments := []struct{ file, words string }{
		{"flatlay_tee_red.png", "a woman walking on a city street"},
		{"flatlay_tee_navy_stripes.png", "a man standing in an office"},
		{"flatlay_longsleeve_green.png", "young woman, long dark hair, standing, casual"},
		{"tee_white_ghost.png", "a man on the beach"},
		{"flatlay_trousers_khaki.png", "a man sitting, relaxed"},
	}
	i := 0
	for _, g := range garments {
		for _, words := range []string{"", g.words} {
			ratio, sid := spec.Ratios[i%len(spec.Ratios)], spec.StyleIDs[i%len(spec.StyleIDs)]
			i++
			t.Run(fmt.Sprintf("%s/%q/%s/%s", g.file, words, ratio, sid), func(t *testing.T) {
				res, err := run(t, lib, Inputs{ProductImage: "file:garments/" + g.file, CustomPrompt: words, Ratio: ratio, StyleID: sid, Quality: "1k", SampleCount: 1})
				if err != nil {
					t.Fatal(err)
				}
				o := res.Outputs[0]
				for _, c := range o.Checks {
					if !c.Pass {
						t.Errorf("check %s failed: %+v", c.Name, c)
					}
				}
				notes := strings.Join(o.Notes, " | ")
				t.Logf("%s", notes)
				if strings.Contains(notes, "model: preset woman-standing-grass") && !strings.Contains(words, "dog") && words != "" && !strings.Contains(notes, "shows a dog") {
					t.Errorf("the Great Dane preset drawn for %q without a note saying why: %s", words, notes)
				}
				if strings.Contains(notes, "preset woman-standing-grass failed") && !strings.Contains(notes, "no female preset could be dressed with this garment") {
					t.Errorf("the female preset failed and no note says a male one was used: %s", notes)
				}
				if words != "" && !strings.Contains(notes, "preset ") {
					t.Errorf("no note names the preset drawn for %q: %s", words, notes)
				}
			})
		}
	}
}
