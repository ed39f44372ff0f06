package presets

import (
	"fmt"
	"slices"
	"strings"
)

// animalWords are the animals a preset photo may show besides the model
// (a tag). A preset with an animal is drawn only when the request names
// one, or when no preset without one qualifies (and Why says so).
var animalWords = []string{"dog", "dogs", "puppy", "cat", "cats", "kitten", "horse", "horses", "pet", "pets", "animal", "animals", "bird", "birds"}

// requestWords are the pose and setting words a request may ask for that
// Why reports when the chosen preset lacks them (stems, as stem folds).
var requestWords = []string{
	"walk", "walking", "run", "running", "seat", "stand", "lean", "leaning", "jump", "jumping", "dance", "dancing", "pose",
	"street", "urban", "park", "beach", "studio", "office", "outdoor", "indoor", "garden", "forest", "field", "grass",
	"snow", "city", "cafe", "home", "room", "backdrop", "industrial", "nature",
}

// Animal is the animal p shows ("" for none).
func (p Preset) Animal() string {
	for _, t := range p.Tags {
		if slices.Contains(animalWords, strings.ToLower(t)) {
			return strings.ToLower(t)
		}
	}
	return ""
}

// asksAnimal reports whether text names an animal.
func asksAnimal(text string) bool {
	for _, w := range tokens(text) {
		if slices.Contains(animalWords, w) {
			return true
		}
	}
	return false
}

// animalPenalty is subtracted from the score of a preset showing an animal
// the request does not name: less than the gender and framing the request
// names are worth together (a "woman ... full body" request still gets the
// only female full-body preset, with Why's note), more than its pose and
// setting words.
const animalPenalty = 3

// words is every pose, setting and tag word of p, stemmed.
func (p Preset) words() map[string]bool {
	out := map[string]bool{}
	for _, group := range [][]string{p.Pose, p.Setting, p.Tags} {
		for _, w := range group {
			for _, t := range tokens(w) {
				out[stem(t)] = true
			}
		}
	}
	return out
}

// Why says in words how well p fits text when it does not fit fully: the
// animal the request did not ask for, and the pose and setting words of
// the request that p lacks; "" when nothing is amiss.
func (l *Library) Why(p Preset, text string, filter Filter) string {
	var why []string
	if a := p.Animal(); a != "" && !asksAnimal(text) {
		alt := "no other"
		g := TextGender(text)
		for _, q := range l.presets {
			if q.ID != p.ID && q.Animal() == "" && filter.accepts(q) && (g == "" || q.Gender == "" || q.Gender == g) {
				alt = "another"
				break
			}
		}
		why = append(why, fmt.Sprintf("the photo shows a %s, which the request did not ask for (the library has %s %s model without an animal)", a, alt, strings.TrimSpace(g+" "+strings.Join(filter.Framing, " or "))))
	}
	have := p.words()
	var missing []string
	for _, w := range tokens(text) {
		s := stem(w)
		if (slices.Contains(requestWords, w) || slices.Contains(requestWords, s)) && !have[s] && !slices.Contains(missing, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("not %q as asked: the best fit the library has is pose %s, setting %s", strings.Join(missing, ", "), strings.Join(p.Pose, "/"), strings.Join(p.Setting, "/")))
	}
	if len(why) == 0 {
		return ""
	}
	return "preset " + p.ID + ": " + strings.Join(why, "; ")
}
