package api

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// The per-model input rules as data: the validator (validate.go) and the
// OpenAPI generator (openapi.go) both read this table, so the document
// cannot drift from what POST /v1/run accepts. A model's fields are listed
// in the order the validator checks them (the first failing field is the
// one reported).

// fieldKind is the value type of an input field and how it is checked.
type fieldKind int

const (
	kindImage       fieldKind = iota // http(s) URL or data:image/<type>;base64, URI
	kindDataImage                    // data:image/<type>;base64, URI only
	kindText                         // free text of at most MaxChars runes
	kindEnum                         // one of Enum ("" is not a member)
	kindEnumOrEmpty                  // one of Enum, or "" meaning "not given"
	kindInt                          // integer in [Min, Max] (and in Ints when set)
	kindBool                         // true or false
	kindID                           // saved-model id: letters, digits, '-' and '_'
	kindPoses                        // array of Min..Max pose objects (Items)
	kindAngles                       // array of Min..Max distinct values of Enum
)

// fieldRule is the rule of one input field. JSON null counts as "not
// given" for every field.
type fieldRule struct {
	Name     string
	Kind     fieldKind
	Required bool
	// RequiredUnless names a field whose non-empty value makes a Required
	// field optional (model-create: prompt unless faceModelId).
	RequiredUnless string
	MaxChars       int      // kindText
	Enum           []string // kindEnum, kindEnumOrEmpty, kindAngles
	Ints           []int    // kindInt: the accepted values
	Unit           string   // kindInt with Ints: the unit named in messages
	Default        any      // applied when not given
	Min, Max       int      // kindInt: value range; arrays: item count
	// When restricts the field to one value of the model's variant field
	// (model-create's type, a pose's type); "" accepts it in every variant.
	When string
	// MaxWhen is a stricter Max for a variant (model-create upload: one sample).
	MaxWhen map[string]int
	// ConflictsWith names a field that must not be given together with this one;
	// ConflictNote says why.
	ConflictsWith, ConflictNote string
	Items                       *modelRules // kindPoses: the rules of one item
	Doc                         string
}

// modelRules are the rules of one object (a model's inputs, a pose).
type modelRules struct {
	// Variant names the enum field whose value selects the fields with a
	// When ("" when the object has no variants).
	Variant string
	Fields  []fieldRule
}

// names returns the accepted field names in table order.
func (m *modelRules) names() []string {
	out := make([]string, len(m.Fields))
	for i, f := range m.Fields {
		out[i] = f.Name
	}
	return out
}

// field returns the rule named name; it panics on a name outside the
// table (a programming error).
func (m *modelRules) field(name string) fieldRule {
	for _, f := range m.Fields {
		if f.Name == name {
			return f
		}
	}
	panic("api: no input rule " + name)
}

// variants returns the values of the variant field ("" none).
func (m *modelRules) variants() []string {
	if m.Variant == "" {
		return nil
	}
	return m.field(m.Variant).Enum
}

// requiredIn lists the required fields of variant (the variant field
// itself left out), for messages.
func (m *modelRules) requiredIn(variant string) []string {
	var out []string
	for _, f := range m.Fields {
		if f.Required && f.Name != m.Variant && (f.When == "" || f.When == variant) {
			out = append(out, f.Name)
		}
	}
	return out
}

// joinOr joins words as "a, b or c" ("a or b" for two).
func joinOr(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func intsText(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// Shorthands of the table.
func image(name string, required bool, doc string) fieldRule {
	return fieldRule{Name: name, Kind: kindImage, Required: required, Doc: doc}
}

func text(name string, required bool, max int, doc string) fieldRule {
	return fieldRule{Name: name, Kind: kindText, Required: required, MaxChars: max, Doc: doc}
}

func enum(name string, set []string, def string, doc string) fieldRule {
	r := fieldRule{Name: name, Kind: kindEnum, Enum: set, Doc: doc}
	if def != "" {
		r.Default = def
	}
	return r
}

func enumOrEmpty(name string, set []string, def string, doc string) fieldRule {
	r := enum(name, set, def, doc)
	r.Kind = kindEnumOrEmpty
	return r
}

func sampleCount() fieldRule {
	return fieldRule{Name: "sampleCount", Kind: kindInt, Default: 1, Min: 1, Max: MaxSampleCount, Doc: "Number of images to generate."}
}

func quality() fieldRule {
	return enum("quality", Qualities, "1k", "Output resolution tier; it sets the price per image (1k=1, 2k=3, 4k=5 credits).")
}

// poseRules are the rules of one pose-control pose.
var poseRules = modelRules{Variant: "type", Fields: []fieldRule{
	{Name: "type", Kind: kindEnum, Enum: PoseTypes, Required: true, Doc: "template: a pose image; custom: a pose described in words."},
	{Name: "cdnUrl", Kind: kindImage, Required: true, When: "template", Doc: "The pose image."},
	{Name: "title", Kind: kindText, MaxChars: MaxNameChars, When: "template", Doc: "A label for the pose."},
	{Name: "text", Kind: kindText, Required: true, MaxChars: MaxShortTextChars, When: "custom", Doc: "The pose in words."},
}}

// inputRules are the rules of every model's inputs.
var inputRules = map[string]*modelRules{
	ModelPromptTryOn: {Fields: []fieldRule{
		image("personImage", true, "The person: an http(s) URL or a data:image/<type>;base64, URI."),
		text("prompt", true, MaxPromptChars, "The outfit to put on the person, in words."),
		quality(),
		sampleCount(),
		enumOrEmpty("ratio", Ratios, "", "Output aspect ratio; empty keeps the person image's."),
		image("modelImageUrl", false, "An optional model image."),
		enumOrEmpty("styleId", StyleIDs, "", "An optional photographic style."),
	}},
	ModelPoseControl: {Fields: []fieldRule{
		image("modelImage", true, "The model to re-pose."),
		{Name: "poses", Kind: kindPoses, Required: true, Min: 1, Max: MaxPoses, Items: &poseRules, Doc: "The poses; one image (and the quality's price) each."},
		quality(),
		enumOrEmpty("ratio", Ratios, "", "Output aspect ratio; empty keeps the model image's."),
	}},
	ModelModelCreate: {Variant: "type", Fields: []fieldRule{
		{Name: "type", Kind: kindEnum, Enum: ModelCreateTypes, Required: true, Doc: "generate: a new model from a description; upload: store a photo as a model."},
		text("name", true, MaxNameChars, "The saved model's name."),
		{Name: "imageBase64", Kind: kindDataImage, Required: true, When: "upload", Doc: "The photo as a data:image/<type>;base64, URI."},
		{Name: "faceModelId", Kind: kindID, When: "generate", Doc: "A saved model whose face to keep (GET /v1/models/saved)."},
		{Name: "prompt", Kind: kindText, Required: true, RequiredUnless: "faceModelId", MaxChars: MaxPromptChars, When: "generate", Doc: "The model in words; may be omitted when faceModelId is given."},
		{Name: "gender", Kind: kindText, MaxChars: MaxShortTextChars, When: "generate"},
		{Name: "bodyType", Kind: kindText, MaxChars: MaxShortTextChars, When: "generate"},
		{Name: "clothing", Kind: kindText, MaxChars: MaxShortTextChars, When: "generate"},
		{Name: "pose", Kind: kindText, MaxChars: MaxShortTextChars, When: "generate"},
		{Name: "poseModelId", Kind: kindID, When: "generate", Doc: "A saved model whose pose to use."},
		{Name: "poseImageBase64", Kind: kindDataImage, When: "generate", ConflictsWith: "poseModelId", ConflictNote: "the pose image replaces a saved pose model", Doc: "A pose image as a data URI (not together with poseModelId)."},
		quality(),
		enum("aspectRatio", Ratios, "3:4", "Output aspect ratio."),
		{Name: "sampleCount", Kind: kindInt, Default: 1, Min: 1, Max: MaxSampleCount, MaxWhen: map[string]int{"upload": 1}, Doc: "Number of models to generate (1 for an upload)."},
	}},
	ModelProductToModel: {Fields: []fieldRule{
		image("productImage", true, "The product (garment) image."),
		text("customPrompt", false, MaxCustomPrompt, "Optional extra direction."),
		image("modelImageUrl", false, "An optional model to wear the product."),
		enumOrEmpty("styleId", StyleIDs, "", "An optional photographic style."),
		quality(),
		sampleCount(),
		enumOrEmpty("ratio", Ratios, "3:4", "Output aspect ratio."),
	}},
	ModelAngleGeneration: {Fields: []fieldRule{
		image("imageUrl", true, "The subject to see from other angles."),
		{Name: "angleIds", Kind: kindAngles, Required: true, Enum: AngleIDs, Min: 1, Max: MaxAngles, Doc: "The angles, each at most once; one image (and the quality's price) each."},
		quality(),
		enumOrEmpty("ratio", Ratios, "", "Output aspect ratio; empty keeps the input's."),
		{Name: "return_base64", Kind: kindBool, Default: false, Doc: "Return the images as data URIs instead of URLs."},
	}},
	ModelTryOn: {Fields: []fieldRule{
		image("personImage", true, "The person."),
		image("garmentImage", true, "The garment."),
		enum("accuracy", Accuracies, "standard", "Speed/accuracy trade-off."),
		sampleCount(),
	}},
	ModelImageToVideo: {Fields: []fieldRule{
		image("imageUrl", true, "The still to animate."),
		text("prompt", false, MaxPromptChars, "Optional motion direction."),
		{Name: "duration", Kind: kindInt, Default: 6, Min: 0, Max: math.MaxInt32, Ints: VideoDurations, Unit: "seconds", Doc: "Video length in seconds (4, 6 or 8: 6, 9 or 12 credits)."},
		enum("aspectRatio", VideoAspectRatios, "9:16", "Video aspect ratio."),
		{Name: "generateAudio", Kind: kindBool, Default: true, Doc: "Add a sound track."},
	}},
}

// rulesOf returns the rules of a known model.
func rulesOf(model string) *modelRules {
	m, ok := inputRules[model]
	if !ok || !slices.Contains(ModelNames, model) {
		panic("api: no input rules for " + model)
	}
	return m
}
