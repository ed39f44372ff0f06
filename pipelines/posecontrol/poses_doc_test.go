package posecontrol

import (
	"os"
	"strings"
	"testing"
)

// TestPosesDoc keeps POSES.md in step with the vocabulary: every pose and
// every phrase is listed there.
func TestPosesDoc(t *testing.T) {
	b, err := os.ReadFile("POSES.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, e := range vocabulary {
		if !strings.Contains(doc, "| "+e.Name+" |") {
			t.Errorf("POSES.md lacks the pose %q", e.Name)
		}
		for _, p := range e.Phrases {
			if !strings.Contains(doc, "`"+p+"`") {
				t.Errorf("POSES.md lacks the phrase %q of %q", p, e.Name)
			}
		}
	}
}
