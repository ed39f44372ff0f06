package tryon

import (
	"testing"

	"fashiond/pipelines/capability/selfcheck"
)

// TestTryonArmPainted: the red tee on pexels_woman_dog_standing (she wears
// a long-sleeve hoodie, her right arm reaching across the dog) leaves the
// old sleeve's forearm and upper arm to a fill: the classical path painted
// a blurred, half-transparent skin-coloured band over the dog's chest, the
// hand floating at its end, while every other check passed
// (changed_outside_subject 0, hands_covered 0.0084, the face's). It is
// refused now, naming arm_painted. Whole arms pass: the red tee on
// codait_man_standing, on fashn_garment (the strip of upper-arm skin
// transfer's armfill paints under the short sleeve, looked at), and the
// green long-sleeve on the dog photo (the new sleeve covers the arm).
func TestTryonArmPainted(t *testing.T) {
	for _, c := range []photoCheck{
		{"pexels_woman_dog_standing.jpg", "flatlay_tee_red.png", 0, "tryon: self-check arm_painted failed: 0.379 above the limit 0.1"},
		{"codait_man_standing.jpg", "flatlay_tee_red.png", 0, ""},
		{"fashn_garment.webp", "flatlay_tee_red.png", 0.0194, ""},
		{"pexels_woman_dog_standing.jpg", "flatlay_longsleeve_green.png", 0.0027, ""},
	} {
		checkCase(t, selfcheck.NameArmPainted, c.person, c.garment, c.want, c.err)
	}
}
