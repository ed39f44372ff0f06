package presets

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fashiond/internal/pipelinetest"
)

// install runs scripts/setup-presets.sh into a temporary data directory and
// returns the presets directory (pipelinetest.PresetDir).
func install(t testing.TB) string { return pipelinetest.PresetDir(t) }

func open(t *testing.T) *Library {
	t.Helper()
	l, err := Open(install(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func ids(ps []Preset) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.ID)
	}
	return s
}

func TestInstalledLibrary(t *testing.T) {
	l := open(t)
	want := map[string][2]int{
		"man-seated-industrial": {832, 1248},
		"man-standing-studio":   {576, 864},
		"man-face-indoor":       {640, 480},
		"man-standing-office":   {413, 684},
		"woman-standing-grass":  {640, 962},
		"woman-halfbody-side":   {426, 636},
		"woman-headshot-light":  {698, 790},
	}
	all := l.All()
	if len(all) != len(want) {
		t.Fatalf("presets %v, want %d", ids(all), len(want))
	}
	for _, p := range all {
		img, err := l.Image(p)
		if err != nil {
			t.Fatal(err)
		}
		b := img.Bounds()
		if w := want[p.ID]; b.Dx() != w[0] || b.Dy() != w[1] {
			t.Errorf("%s: %dx%d, want %v", p.ID, b.Dx(), b.Dy(), w)
		}
		if p.Licence == "" || p.Origin == "" || len(p.Pose) == 0 || len(p.Setting) == 0 {
			t.Errorf("%s: incomplete entry %+v", p.ID, p)
		}
	}
}

func TestScriptIsIdempotent(t *testing.T) {
	dir := install(t)
	st1, _ := os.Stat(filepath.Join(dir, "fashn_model.webp"))
	// Operators' file must survive a re-run.
	if err := os.WriteFile(filepath.Join(dir, "presets.json"), []byte(`{"presets": []}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(pipelinetest.Root(), "scripts", "setup-presets.sh"))
	cmd.Env = append(os.Environ(), "FASHIOND_PRESETS_DIR="+dir, "FASHIOND_PRESETS_SRC="+pipelinetest.File(t, "images"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st2, _ := os.Stat(filepath.Join(dir, "fashn_model.webp"))
	if !st1.ModTime().Equal(st2.ModTime()) {
		t.Error("verified copy was rewritten")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "presets.json"))
	if string(b) != `{"presets": []}`+"\n" {
		t.Errorf("presets.json changed: %q", b)
	}
}

func TestChoose(t *testing.T) {
	l := open(t)
	cases := []struct {
		text   string
		n      int
		filter Filter
		want   []string
	}{
		{"a woman smiling, studio portrait", 1, Filter{}, []string{"woman-headshot-light"}},
		{"a woman standing in a park, full body", 1, Filter{}, []string{"woman-standing-grass"}},
		{"woman looking back over the shoulder", 1, Filter{Framing: []string{FullBody, UpperBody}}, []string{"woman-halfbody-side"}},
		{"man standing in an office", 1, Filter{Framing: []string{FullBody}}, []string{"man-standing-office"}},
		{"man sitting outdoors on concrete, full body", 1, Filter{}, []string{"man-seated-industrial"}},
		{"young guy standing in a white studio", 1, Filter{}, []string{"man-standing-studio"}},
		{"close-up headshot of a man with glasses", 1, Filter{}, []string{"man-face-indoor"}},
		{"female model", 4, Filter{Framing: []string{UpperBody}}, []string{"woman-halfbody-side", "woman-halfbody-side", "woman-halfbody-side", "woman-halfbody-side"}},
		{"man sitting", 1, Filter{Framing: []string{FullBody, UpperBody}}, []string{"man-seated-industrial"}},
		{"woman", 1, Filter{Framing: []string{FullBody}}, []string{"woman-standing-grass"}},
	}
	for _, c := range cases {
		got := ids(l.Choose(c.text, c.n, 1, c.filter))
		if !slices.Equal(got, c.want) {
			t.Errorf("Choose(%q, %d, %v) = %v, want %v", c.text, c.n, c.filter, got, c.want)
		}
	}
}

// TestNoAstronautModel: the flight-suit portrait is no fashion model;
// every female preset is a photo of a woman in clothes a garment can
// replace.
func TestNoAstronautModel(t *testing.T) {
	for _, p := range open(t).All() {
		if p.File == "astronaut.png" {
			t.Errorf("preset %s is the astronaut portrait", p.ID)
		}
	}
}

// TestMissing names the unmet requirement (gender and framing) and what
// the library has; "" when a preset fits.
func TestMissing(t *testing.T) {
	l := open(t)
	men := &Library{presets: []Preset{{ID: "a", Gender: "male", Framing: UpperBody}, {ID: "b", Gender: "male", Framing: Face}}}
	cases := []struct {
		lib    *Library
		text   string
		filter Filter
		want   string
	}{
		{l, "a woman", Filter{Framing: []string{FullBody}}, ""},
		{l, "a man, seated", Filter{Framing: []string{FullBody}}, ""},
		{men, "a woman", Filter{}, "no female model (the library has: male upper-body, male face)"},
		{men, "a man", Filter{Framing: []string{FullBody}}, "no male full-body model (the library has: male upper-body, male face)"},
		{men, "a model", Filter{Framing: []string{FullBody}}, "no full-body model (the library has: male upper-body, male face)"},
		{&Library{}, "a man", Filter{}, "no male model: the preset library is empty"},
		{&Library{presets: []Preset{{ID: "s", Gender: "female", Framing: UpperBody, NotDressable: "a side view"}}}, "a woman",
			Filter{Framing: []string{UpperBody}, Dressable: true}, "no female upper-body model (the library has: female upper-body (not dressable: a side view))"},
	}
	for _, c := range cases {
		if got := c.lib.Missing(c.text, c.filter); got != c.want {
			t.Errorf("Missing(%q, %v) = %q, want %q", c.text, c.filter, got, c.want)
		}
	}
}

func TestChooseDistinctAndDeterministic(t *testing.T) {
	l := open(t)
	body := Filter{Framing: []string{FullBody, UpperBody}}
	firsts := map[string]bool{}
	for seed := int64(0); seed < 20; seed++ {
		a := l.Choose("a model", 3, seed, body)
		b := l.Choose("a model", 3, seed, body)
		if !slices.Equal(ids(a), ids(b)) {
			t.Fatalf("seed %d: %v then %v", seed, ids(a), ids(b))
		}
		if len(a) != 3 || a[0].ID == a[1].ID || a[1].ID == a[2].ID || a[0].ID == a[2].ID {
			t.Fatalf("seed %d: want 3 distinct body presets, got %v", seed, ids(a))
		}
		firsts[a[0].ID] = true
	}
	if len(firsts) < 2 {
		t.Errorf("with no preference the seed never changed the first pick: %v", firsts)
	}
}

func TestOperatorExtension(t *testing.T) {
	dir := install(t)
	data, err := os.ReadFile(pipelinetest.File(t, "images/camera.png"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tripod.png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "presets.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"presets": [
	  {"id": "man-tripod", "file": "tripod.png", "licence": "CC0", "origin": "scikit-image", "gender": "male",
	   "framing": "full-body", "pose": ["profile", "crouching"], "setting": ["park", "outdoor"], "tags": ["coat", "camera"]},
	  {"id": "man-face-indoor", "file": "gocv_face.jpg", "licence": "Apache-2.0", "origin": "gocv", "gender": "male",
	   "framing": "face", "pose": ["front"], "setting": ["office"], "tags": ["retagged"]}]}`)
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.All()) != 8 {
		t.Fatalf("want 7 built-in + 1 new, got %v", ids(l.All()))
	}
	if p, _ := l.Get("man-face-indoor"); !slices.Equal(p.Tags, []string{"retagged"}) {
		t.Errorf("operator entry did not replace the built-in one: %+v", p)
	}
	if got := l.Choose("man with a camera in the park, profile", 1, 0, Filter{}); len(got) != 1 || got[0].ID != "man-tripod" {
		t.Errorf("Choose = %v", ids(got))
	}
	bad := map[string]string{
		`{"presets": [{"id": "x", "file": "../etc/passwd", "licence": "l", "framing": "face"}]}`:             "plain file name",
		`{"presets": [{"id": "x", "file": "missing.png", "licence": "l", "framing": "face"}]}`:               "missing",
		`{"presets": [{"id": "x", "file": "tripod.png", "licence": "l", "framing": "knees"}]}`:               "framing",
		`{"presets": [{"id": "x", "file": "tripod.png", "licence": "l", "framing": "face", "gender": "x"}]}`: "gender",
		`{"presets": [{"id": "x", "file": "tripod.png", "framing": "face"}]}`:                                "licence",
		`{"presets": [{"id": "x", "file": "tripod.png", "licence": "l", "framing": "face", "colour": 1}]}`:   "unknown field",
		`{"presets": [`: "unexpected EOF",
	}
	for s, want := range bad {
		write(s)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", s, err, want)
		}
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "setup-presets.sh") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestTextGender(t *testing.T) {
	for text, want := range map[string]string{
		"a woman in a red dress": "female", "Her hands on hips": "female", "menswear lookbook": "male",
		"A man and his dog": "male", "model standing": "", "the theme": "", "man or woman": "",
	} {
		if got := TextGender(text); got != want {
			t.Errorf("TextGender(%q) = %q, want %q", text, got, want)
		}
	}
}

func FuzzScore(f *testing.F) {
	for _, s := range []string{"woman sitting outdoors", "full body man", "", "ÄÖÜ close-up", "sits sits sits"} {
		f.Add(s)
	}
	p := Preset{ID: "x", Gender: "female", Framing: FullBody, Pose: []string{"seated", "arms down"}, Setting: []string{"studio"}, Tags: []string{"red"}}
	f.Fuzz(func(t *testing.T, s string) {
		a := Score(p, s)
		if a != Score(p, s) || a < 0 || a > 4+2+4 {
			t.Fatalf("Score(%q) = %d", s, a)
		}
		_ = TextGender(s)
	})
}

// TestDressableNeverChoosesSideView: a garment is never put on a preset
// marked not_dressable (the side view over the shoulder, which the
// transfer refuses every time); without the filter it can still be chosen.
func TestDressableNeverChoosesSideView(t *testing.T) {
	l := open(t)
	upper := Filter{Framing: []string{UpperBody, FullBody}}
	dressable := upper
	dressable.Dressable = true
	seen := map[bool]bool{}
	for seed := int64(0); seed < 40; seed++ {
		for _, f := range []Filter{upper, dressable} {
			got := ids(l.Choose("a woman looking back over the shoulder", 2, seed, f))
			if slices.Contains(got, "woman-halfbody-side") {
				seen[f.Dressable] = true
			}
		}
	}
	if seen[true] {
		t.Error("a Dressable filter chose woman-halfbody-side")
	}
	if !seen[false] {
		t.Error("woman-halfbody-side was never chosen without the filter: the test proves nothing")
	}
}
