// Package presets is the preset model library: person photos that the
// pipelines use as the base model when a request names none
// (product-to-model without modelImageUrl, model-create generate). The
// library is a directory of images plus JSON manifests; see README.md for
// the format and scripts/setup-presets.sh for the built-in set.
package presets

import (
	"encoding/json"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	_ "image/jpeg" // preset photos may be JPEG, PNG or WebP
	_ "image/png"

	_ "golang.org/x/image/webp"

	"fashiond/pipelines"
)

// Framing values.
const (
	FullBody  = "full-body"
	UpperBody = "upper-body"
	Face      = "face"
)

// Preset is one model photo of the library.
type Preset struct {
	ID      string   `json:"id"`
	File    string   `json:"file"`             // file name inside the library directory
	SHA256  string   `json:"sha256,omitempty"` // of File (checked by the setup script)
	Licence string   `json:"licence"`
	Origin  string   `json:"origin"`
	Gender  string   `json:"gender"`  // "female", "male" or "" (unspecified)
	Framing string   `json:"framing"` // FullBody, UpperBody or Face
	Pose    []string `json:"pose"`    // pose words: standing, seated, front, ...
	Setting []string `json:"setting"` // setting words: studio, outdoor, urban, ...
	Tags    []string `json:"tags"`    // anything else worth matching: clothing, hair, ...
	// NotDressable, when set, says why a garment cannot be put on this
	// photo (e.g. a side view: the pose model puts the shoulders on the
	// face); such a preset is never chosen for a garment (Filter.Dressable).
	NotDressable string `json:"not_dressable,omitempty"`
}

// manifest is the JSON file shape.
type manifest struct {
	Presets []Preset `json:"presets"`
}

// Library is an opened preset directory.
type Library struct {
	dir     string
	presets []Preset
}

// Filter restricts Choose.
type Filter struct {
	// Framing lists acceptable framings; empty accepts all.
	Framing []string
	// Dressable keeps only presets a garment can be put on (no
	// NotDressable reason).
	Dressable bool
}

// accepts reports whether p passes the filter's framing and dressability.
func (f Filter) accepts(p Preset) bool {
	if len(f.Framing) > 0 && !slices.Contains(f.Framing, p.Framing) {
		return false
	}
	return !f.Dressable || p.NotDressable == ""
}

// Open reads every *.json manifest in dir (builtin.json from the setup
// script, presets.json for operators' additions, in name order; a later
// entry with the same id replaces an earlier one) and checks that each
// entry is well formed and that its image file exists.
func Open(dir string) (*Library, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("presets: %v (run scripts/setup-presets.sh)", err)
		}
		return nil, fmt.Errorf("presets: no manifest (*.json) in %s (run scripts/setup-presets.sh)", dir)
	}
	sort.Strings(files)
	l := &Library{dir: dir}
	index := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("presets: %w", err)
		}
		var m manifest
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("presets: %s: %v", f, err)
		}
		for k, p := range m.Presets {
			if err := check(dir, p); err != nil {
				return nil, fmt.Errorf("presets: %s: entry %d: %v", f, k, err)
			}
			if i, ok := index[p.ID]; ok {
				l.presets[i] = p
				continue
			}
			index[p.ID] = len(l.presets)
			l.presets = append(l.presets, p)
		}
	}
	return l, nil
}

func check(dir string, p Preset) error {
	if p.ID == "" {
		return fmt.Errorf("missing id")
	}
	if p.File == "" || p.File != filepath.Base(p.File) || strings.HasPrefix(p.File, ".") {
		return fmt.Errorf("%s: file %q must be a plain file name in the library directory", p.ID, p.File)
	}
	switch p.Gender {
	case "", "female", "male":
	default:
		return fmt.Errorf("%s: gender %q (want female, male or empty)", p.ID, p.Gender)
	}
	switch p.Framing {
	case FullBody, UpperBody, Face:
	default:
		return fmt.Errorf("%s: framing %q (want %s, %s or %s)", p.ID, p.Framing, FullBody, UpperBody, Face)
	}
	if p.Licence == "" {
		return fmt.Errorf("%s: missing licence", p.ID)
	}
	if st, err := os.Stat(filepath.Join(dir, p.File)); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s: image %s missing", p.ID, p.File)
	}
	return nil
}

// Dir is the library directory.
func (l *Library) Dir() string { return l.dir }

// All returns every preset, in manifest order.
func (l *Library) All() []Preset { return slices.Clone(l.presets) }

// Get returns the preset with the given id.
func (l *Library) Get(id string) (Preset, bool) {
	for _, p := range l.presets {
		if p.ID == id {
			return p, true
		}
	}
	return Preset{}, false
}

// Image decodes a preset's photo.
func (l *Library) Image(p Preset) (image.Image, error) {
	if p.File != filepath.Base(p.File) {
		return nil, fmt.Errorf("presets: bad file name %q", p.File)
	}
	f, err := os.Open(filepath.Join(l.dir, p.File))
	if err != nil {
		return nil, fmt.Errorf("presets: %s: %w", p.ID, err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("presets: %s: decode %s: %w", p.ID, p.File, err)
	}
	return img, nil
}

// Gender words recognised in free text.
var (
	femaleWords = []string{"woman", "women", "female", "girl", "girls", "lady", "ladies", "she", "her", "feminine", "womens", "womenswear"}
	maleWords   = []string{"man", "men", "male", "guy", "guys", "boy", "boys", "gentleman", "he", "his", "him", "masculine", "mens", "menswear"}
)

// Framing phrases recognised in free text.
var framingPhrases = map[string][]string{
	FullBody:  {"full body", "full-body", "fullbody", "head to toe", "whole body", "full length", "full-length"},
	UpperBody: {"upper body", "upper-body", "half body", "half-body", "waist up", "torso", "bust"},
	Face:      {"face", "headshot", "close-up", "closeup", "close up", "portrait"},
}

// TextGender returns "female", "male" or "" for free text.
func TextGender(text string) string {
	words := tokens(text)
	f, m := 0, 0
	for _, w := range words {
		if slices.Contains(femaleWords, w) {
			f++
		}
		if slices.Contains(maleWords, w) {
			m++
		}
	}
	switch {
	case f > m:
		return "female"
	case m > f:
		return "male"
	}
	return ""
}

// tokens lower-cases text and splits it into words (letters, digits, '-').
func tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r > 127)
	})
}

// stem folds simple English inflections so that "sits", "sitting" and
// "seated" meet, and "stands"/"standing"/"stand" too.
func stem(w string) string {
	switch w {
	case "sit", "sits", "sitting", "seated", "sat":
		return "seat"
	case "stand", "stands", "standing", "stood":
		return "stand"
	case "smile", "smiles", "smiling":
		return "smile"
	case "outdoors", "outside", "exterior":
		return "outdoor"
	case "indoors", "inside", "interior":
		return "indoor"
	case "city", "streets":
		return "urban"
	}
	for _, suf := range []string{"ing", "es", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			return strings.TrimSuffix(w, suf)
		}
	}
	return w
}

// Score rates how well p fits free text: +4 for the requested gender (and
// Choose drops the other gender), +2 for a named framing, +1 for each pose,
// setting or tag word (or phrase) the text mentions.
func Score(p Preset, text string) int {
	lt := " " + strings.Join(tokens(text), " ") + " "
	stems := map[string]bool{}
	for _, w := range tokens(text) {
		stems[stem(w)] = true
	}
	s := 0
	if g := TextGender(text); g != "" && g == p.Gender {
		s += 4
	}
	for _, ph := range framingPhrases[p.Framing] {
		if strings.Contains(lt, " "+ph+" ") {
			s += 2
			break
		}
	}
	seen := map[string]bool{}
	for _, group := range [][]string{p.Pose, p.Setting, p.Tags} {
		for _, word := range group {
			word = strings.ToLower(word)
			key := word
			hit := false
			if strings.Contains(word, " ") {
				hit = strings.Contains(lt, " "+word+" ")
			} else {
				key = stem(word)
				hit = stems[key]
			}
			if hit && !seen[key] {
				seen[key] = true
				s++
			}
		}
	}
	return s
}

// Choose picks n presets for free text (a customPrompt, a model
// description): presets outside the filter are skipped, and when the text
// names a gender the other gender's presets are too. The rest are ranked
// by Score (less animalPenalty for a preset showing an animal the text
// does not name), ties broken by a hash of the seed and the id, and returned in
// rank order, cycling when n exceeds the candidates, so different samples
// get different presets where the library has them. Deterministic for a
// given text, n, seed and library; nil when no preset qualifies.
func (l *Library) Choose(text string, n int, seed int64, filter Filter) []Preset {
	if n <= 0 {
		return nil
	}
	g := TextGender(text)
	asks := asksAnimal(text)
	type cand struct {
		p     Preset
		score int
		tie   uint64
	}
	var cs []cand
	for _, p := range l.presets {
		if !filter.accepts(p) {
			continue
		}
		if g != "" && p.Gender != "" && p.Gender != g {
			continue
		}
		sc := Score(p, text)
		if p.Animal() != "" && !asks {
			sc -= animalPenalty
		}
		cs = append(cs, cand{p, sc, pipelines.Seed(fmt.Sprintf("%d/%s", seed, p.ID))})
	}
	if len(cs) == 0 {
		return nil
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].score != cs[j].score {
			return cs[i].score > cs[j].score
		}
		return cs[i].tie < cs[j].tie
	})
	out := make([]Preset, n)
	for i := range out {
		out[i] = cs[i%len(cs)].p
	}
	return out
}

// Missing says which hard requirement of a request no preset meets: the
// gender text names (TextGender) together with one of filter's framings.
// It returns "" when some preset meets both, else a sentence naming the
// requirement and what the library has, e.g. "no female full-body model
// (the library has: male full-body, female upper-body)". Pose, setting
// and tag words are preferences (Score), never requirements.
func (l *Library) Missing(text string, filter Filter) string {
	g := TextGender(text)
	var have []string
	for _, p := range l.presets {
		genderOK := g == "" || p.Gender == "" || p.Gender == g
		if genderOK && filter.accepts(p) {
			return ""
		}
		d := strings.TrimSpace(p.Gender + " " + p.Framing)
		if filter.Dressable && p.NotDressable != "" && (Filter{Framing: filter.Framing}).accepts(p) {
			d += " (not dressable: " + p.NotDressable + ")"
		}
		if !slices.Contains(have, d) {
			have = append(have, d)
		}
	}
	want := strings.TrimSpace(g + " " + strings.Join(filter.Framing, " or "))
	if len(have) == 0 {
		return strings.Replace(fmt.Sprintf("no %s model: the preset library is empty", want), "  ", " ", 1)
	}
	return strings.Replace(fmt.Sprintf("no %s model (the library has: %s)", want, strings.Join(have, ", ")), "  ", " ", 1)
}
