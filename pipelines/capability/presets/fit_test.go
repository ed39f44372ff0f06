package presets

import (
	"strings"
	"testing"
)

// TestNoAnimalUnlessAsked: the issue's model-create request ("young woman,
// long dark hair, standing, casual") got the woman hugging a Great Dane;
// a preset showing an animal now ranks below the others unless the text
// names one, and Why says so when it is drawn anyway (the only female
// full-body preset), and names the request's pose and setting words the
// chosen preset lacks.
func TestNoAnimalUnlessAsked(t *testing.T) {
	l := open(t)
	body := Filter{Framing: []string{FullBody, UpperBody}}
	cases := []struct {
		text     string
		filter   Filter
		want     string
		whyHas   []string // substrings of Why; nil: Why is ""
		whyLacks []string
	}{
		{"young woman, long dark hair, standing, casual", Filter{}, "woman-halfbody-side", []string{`not "standing" as asked`}, []string{"dog"}},
		{"a woman with her dog in a park", body, "woman-standing-grass", nil, []string{"dog"}},
		{"woman walking on a city street", Filter{Framing: []string{FullBody}, Dressable: true}, "woman-standing-grass",
			[]string{"shows a dog", "no other female full-body model", `not "walking, city, street" as asked`}, nil},
		{"man standing in an office", Filter{Framing: []string{FullBody}}, "man-standing-office", nil, nil},
		{"a man on the beach", body, "", []string{`not "beach" as asked`}, nil},
	}
	for _, c := range cases {
		got := l.Choose(c.text, 1, 1, c.filter)
		if len(got) != 1 {
			t.Fatalf("%q: %d presets", c.text, len(got))
		}
		if c.want != "" && got[0].ID != c.want {
			t.Errorf("Choose(%q) = %s, want %s", c.text, got[0].ID, c.want)
		}
		why := l.Why(got[0], c.text, c.filter)
		if c.whyHas == nil && c.whyLacks == nil && why != "" {
			t.Errorf("Why(%s, %q) = %q, want none", got[0].ID, c.text, why)
		}
		for _, w := range c.whyHas {
			if !strings.Contains(why, w) {
				t.Errorf("Why(%s, %q) = %q, want it to say %q", got[0].ID, c.text, why, w)
			}
		}
		for _, w := range c.whyLacks {
			if strings.Contains(why, w) {
				t.Errorf("Why(%s, %q) = %q, must not say %q", got[0].ID, c.text, why, w)
			}
		}
	}
}
