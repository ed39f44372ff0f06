package diffusion

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LayoutFashnVTON is the layout of a FASHN VTON v1.5 export: a pixel-space
// MMDiT sampled by rectified flow (docs/GENERATIVE.md, "FASHN VTON").
const LayoutFashnVTON = "fashn-vton"

// The folder of a fashn-vton export.
const (
	dirTransformer = "transformer"
)

// Weight origins a fashn-vton fashiond.json declares.
const (
	// WeightsReleased is the authors' published weights, exported.
	WeightsReleased = "released"
	// WeightsRandom is a random-weight export (benchmarks and tests): its
	// pictures are noise-like and say nothing about quality.
	WeightsRandom = "random"
)

// FASHN VTON's own defaults (its pipeline.py: 30 steps, guidance 1.5,
// mu 1.5, guidance skipped on the last step; 576×864 at patch 12).
const (
	defaultFashnSteps    = 30
	defaultFashnGuidance = 1.5
	defaultFashnMu       = 1.5
	defaultFashnSkipLast = 1
	maxFashnPatch        = 64
	minFashnSide         = 16
)

// The garment categories of FASHN VTON and their class labels (0 is the
// null class of classifier-free guidance).
const (
	CategoryTops      = "tops"
	CategoryBottoms   = "bottoms"
	CategoryOnePieces = "one-pieces"
)

var fashnCategories = []string{CategoryTops, CategoryBottoms, CategoryOnePieces}

// FashnLayout is what a fashn-vton folder's fashiond.json declares. Unknown
// fields are refused; steps, guidance, mu and skip_guidance_last have the
// reference's defaults.
type FashnLayout struct {
	Layout string `json:"layout"`
	// Weights is "released" (the authors' weights) or "random".
	Weights string `json:"weights"`
	// Width and Height are the model's fixed input size (576×864).
	Width  int `json:"width"`
	Height int `json:"height"`
	// PatchSize is the transformer's patch side (12); the size must be a
	// multiple of it.
	PatchSize int     `json:"patch_size"`
	Steps     int     `json:"steps"`
	Guidance  float64 `json:"guidance"`
	// Mu is the shift of the time schedule (get_rf_schedule's mu).
	Mu float64 `json:"mu"`
	// SkipGuidanceLast turns guidance off on the last N steps.
	SkipGuidanceLast *int `json:"skip_guidance_last"`
	// Categories maps tops, bottoms and one-pieces to their class labels.
	Categories map[string]int `json:"categories"`
}

// layoutName reads only the layout field of a fashiond.json ("" when the
// JSON is not an object with a string layout).
func layoutName(b []byte) string {
	var v struct {
		Layout string `json:"layout"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Layout
}

// isFashnFolder says whether dir is to be read as a fashn-vton export: its
// fashiond.json names the layout, or it has fashiond.json and no
// model_index.json (a Stable Diffusion export has one), so that a broken
// fashiond.json is refused naming its field.
func isFashnFolder(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, FileLayout))
	if err != nil {
		return false
	}
	if layoutName(b) == LayoutFashnVTON {
		return true
	}
	_, err = os.Stat(filepath.Join(dir, fileIndex))
	return os.IsNotExist(err)
}

// ParseFashnLayout decodes and validates a fashn-vton fashiond.json. Errors
// name the file and the field.
func ParseFashnLayout(b []byte) (FashnLayout, error) {
	var l FashnLayout
	if err := decodeLayout(b, &l); err != nil {
		return l, err
	}
	if l.Steps == 0 {
		l.Steps = defaultFashnSteps
	}
	if l.Guidance == 0 {
		l.Guidance = defaultFashnGuidance
	}
	if l.Mu == 0 {
		l.Mu = defaultFashnMu
	}
	if l.SkipGuidanceLast == nil {
		n := defaultFashnSkipLast
		l.SkipGuidanceLast = &n
	}
	return l, l.check()
}

func (l *FashnLayout) check() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: field %q: %s", FileLayout, field, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Layout == "":
		return bad("layout", "missing (a FASHN VTON export declares %q)", LayoutFashnVTON)
	case l.Layout != LayoutFashnVTON:
		return bad("layout", "%q is not %q (a folder without model_index.json must be a %s export)", l.Layout, LayoutFashnVTON, LayoutFashnVTON)
	case l.Weights != WeightsReleased && l.Weights != WeightsRandom:
		return bad("weights", "%q must be %q (the authors' weights) or %q (a random-weight export)", l.Weights, WeightsReleased, WeightsRandom)
	case l.PatchSize < 1 || l.PatchSize > maxFashnPatch:
		return bad("patch_size", "%d must be in 1..%d", l.PatchSize, maxFashnPatch)
	case l.Width < minFashnSide || l.Width > MaxSide || l.Width%l.PatchSize != 0:
		return bad("width", "%d must be a multiple of patch_size %d in %d..%d", l.Width, l.PatchSize, minFashnSide, MaxSide)
	case l.Height < minFashnSide || l.Height > MaxSide || l.Height%l.PatchSize != 0:
		return bad("height", "%d must be a multiple of patch_size %d in %d..%d", l.Height, l.PatchSize, minFashnSide, MaxSide)
	case l.Steps < 1 || l.Steps > MaxSteps:
		return bad("steps", "%d must be in 1..%d", l.Steps, MaxSteps)
	case math.IsNaN(l.Guidance) || l.Guidance < 0 || l.Guidance > maxFlowGuidance:
		return bad("guidance", "%v must be in 0..%d", l.Guidance, maxFlowGuidance)
	case math.IsNaN(l.Mu) || math.Abs(l.Mu) > maxFlowMu:
		return bad("mu", "%v must be in -%d..%d", l.Mu, maxFlowMu, maxFlowMu)
	case *l.SkipGuidanceLast < 0 || *l.SkipGuidanceLast > l.Steps:
		return bad("skip_guidance_last", "%d must be in 0..%d (steps)", *l.SkipGuidanceLast, l.Steps)
	}
	return l.checkCategories()
}

// checkCategories requires exactly tops, bottoms and one-pieces with
// distinct labels 1..3 (0 is the null class).
func (l *FashnLayout) checkCategories() error {
	var names []string
	for k := range l.Categories {
		names = append(names, k)
	}
	slices.Sort(names)
	want := slices.Clone(fashnCategories)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		return fmt.Errorf("%s: field \"categories\": has [%s], must map exactly %s to their class labels",
			FileLayout, strings.Join(names, ", "), strings.Join(fashnCategories, ", "))
	}
	seen := map[int]string{}
	for _, k := range fashnCategories {
		v := l.Categories[k]
		if v < 1 || v > len(fashnCategories) {
			return fmt.Errorf("%s: field \"categories\": %s = %d must be in 1..%d (0 is the null class)", FileLayout, k, v, len(fashnCategories))
		}
		if o, dup := seen[v]; dup {
			return fmt.Errorf("%s: field \"categories\": %s and %s share label %d", FileLayout, o, k, v)
		}
		seen[v] = k
	}
	return nil
}

// readFashnLayout reads and validates dir/fashiond.json.
func readFashnLayout(dir string) (FashnLayout, error) {
	b, err := readLayoutFile(dir, "a "+LayoutFashnVTON+" export declares its layout in it")
	if err != nil {
		return FashnLayout{}, err
	}
	return ParseFashnLayout(b)
}
