package posecontrol

import (
	"os"
	"strings"
	"testing"

	"fashiond/pipelines/capability/repose"
)

// TestPosesDoc keeps POSES.md in step with the vocabulary: every pose and
// every phrase is listed there.
func TestPosesDoc(t *testing.T) {
	b, err := os.ReadFile("POSES.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for name, phrases := range repose.PosePhrases() {
		if !strings.Contains(doc, "| "+name+" |") {
			t.Errorf("POSES.md lacks the pose %q", name)
		}
		for _, p := range phrases {
			if !strings.Contains(doc, "`"+p+"`") {
				t.Errorf("POSES.md lacks the phrase %q of %q", p, name)
			}
		}
	}
}
