package spec

import (
	"math"
	"strings"
)

// The per-model input rules as data. Package api's validator and OpenAPI
// generator interpret this table, so the document cannot drift from what
// POST /v1/run accepts, and Normalise applies its defaults. A model's fields
// are listed in the order the validator checks them (the first failing
// field is the one reported).

// Kind is the value type of an input field and how it is checked.
type Kind int

// The field kinds.
const (
	KindImage       Kind = iota // http(s) URL or data:image/<type>;base64, URI
	KindDataImage               // data:image/<type>;base64, URI only
	KindText                    // free text of at most MaxChars runes
	KindEnum                    // one of Enum ("" is not a member)
	KindEnumOrEmpty             // one of Enum, or "" meaning "not given"
	KindInt                     // integer in [Min, Max] (and in Ints when set)
	KindBool                    // true or false
	KindID                      // saved-model id: letters, digits, '-' and '_'
	KindPoses                   // array of Min..Max pose objects (Items)
	KindAngles                  // array of Min..Max distinct values of Enum
)

// Field is the rule of one input field. JSON null counts as "not given" for
// every field.
type Field struct {
	Name     string
	Kind     Kind
	Required bool
	// RequiredUnless names a field whose non-empty value makes a Required
	// field optional (model-create: prompt unless faceModelId).
	RequiredUnless string
	MaxChars       int      // KindText
	Enum           []string // KindEnum, KindEnumOrEmpty, KindAngles
	Ints           []int    // KindInt: the accepted values
	Unit           string   // KindInt with Ints: the unit named in messages
	Default        any      // applied when not given (string, int or bool)
	Min, Max       int      // KindInt: value range; arrays: item count
	Noun           string   // arrays: what one item is called in messages
	// When restricts the field to one value of the object's variant field
	// (model-create's type, a pose's type); "" accepts it in every variant.
	When string
	// MaxWhen is a stricter Max for a variant (model-create upload: one sample).
	MaxWhen map[string]int
	// ConflictsWith names a field that must not be given together with this
	// one; ConflictNote says why.
	ConflictsWith, ConflictNote string
	Items                       *Object // KindPoses: the rules of one item
	Doc                         string
}

// Object holds the rules of one JSON object (a model's inputs, a pose).
type Object struct {
	// Variant names the enum field whose value selects the fields with a
	// When ("" when the object has no variants).
	Variant string
	Fields  []Field
}

// Names returns the accepted field names in table order.
func (m *Object) Names() []string {
	out := make([]string, len(m.Fields))
	for i, f := range m.Fields {
		out[i] = f.Name
	}
	return out
}

// Field returns the rule named name; it panics on a name outside the table
// (a programming error).
func (m *Object) Field(name string) Field {
	for _, f := range m.Fields {
		if f.Name == name {
			return f
		}
	}
	panic("spec: no input rule " + name)
}

// Variants returns the values of the variant field (nil: no variants).
func (m *Object) Variants() []string {
	if m.Variant == "" {
		return nil
	}
	return m.Field(m.Variant).Enum
}

// RequiredIn lists the required fields of variant (the variant field itself
// left out), for messages.
func (m *Object) RequiredIn(variant string) []string {
	var out []string
	for _, f := range m.Fields {
		if f.Required && f.Name != m.Variant && (f.When == "" || f.When == variant) {
			out = append(out, f.Name)
		}
	}
	return out
}

// InputRules returns the input rules of a known model; it panics on an
// unknown name (a programming error: check Known first).
func InputRules(model string) *Object {
	m, ok := Lookup(model)
	if !ok {
		panic("spec: no input rules for " + model)
	}
	return m.Inputs
}

// Shorthands of the table.

func image(name string, required bool, doc string) Field {
	return Field{Name: name, Kind: KindImage, Required: required, Doc: doc}
}

func text(name string, required bool, max int, doc string) Field {
	return Field{Name: name, Kind: KindText, Required: required, MaxChars: max, Doc: doc}
}

func enum(name string, set []string, def string, doc string) Field {
	r := Field{Name: name, Kind: KindEnum, Enum: set, Doc: doc}
	if def != "" {
		r.Default = def
	}
	return r
}

func enumOrEmpty(name string, set []string, def string, doc string) Field {
	r := enum(name, set, def, doc)
	r.Kind = KindEnumOrEmpty
	return r
}

func sampleCount() Field {
	return Field{Name: "sampleCount", Kind: KindInt, Default: 1, Min: 1, Max: MaxSampleCount, Doc: "Number of images to generate."}
}

func quality() Field {
	return enum("quality", Qualities, DefaultQuality, "Output resolution tier; it sets the price per image ("+qualityPrices()+" credits).")
}

// qualityPrices is "1k=1, 2k=3, 4k=5".
func qualityPrices() string {
	parts := make([]string, len(Qualities))
	for i, q := range Qualities {
		parts[i] = q + "=" + itoa(QualityCredits[q])
	}
	return strings.Join(parts, ", ")
}

// PoseRules are the rules of one pose-control pose.
var PoseRules = &Object{Variant: "type", Fields: []Field{
	{Name: "type", Kind: KindEnum, Enum: PoseTypes, Required: true, Doc: "template: a pose image; custom: a pose described in words."},
	{Name: "cdnUrl", Kind: KindImage, Required: true, When: PoseTemplate, Doc: "The pose image."},
	{Name: "title", Kind: KindText, MaxChars: MaxNameChars, When: PoseTemplate, Doc: "A label for the pose."},
	{Name: "text", Kind: KindText, Required: true, MaxChars: MaxShortTextChars, When: PoseCustom, Doc: "The pose in words."},
}}

var promptTryOnRules = &Object{Fields: []Field{
	image("personImage", true, "The person: an http(s) URL or a data:image/<type>;base64, URI."),
	text("prompt", true, MaxPromptChars, "The outfit to put on the person, in words."),
	quality(),
	sampleCount(),
	enumOrEmpty("ratio", Ratios, "", "Output aspect ratio; empty keeps the person image's."),
	image("modelImageUrl", false, "An optional model image."),
	enumOrEmpty("styleId", StyleIDs, "", "An optional photographic style."),
}}

var poseControlRules = &Object{Fields: []Field{
	image("modelImage", true, "The model to re-pose."),
	{Name: "poses", Kind: KindPoses, Required: true, Min: 1, Max: MaxPoses, Noun: "pose", Items: PoseRules, Doc: "The poses; one image (and the quality's price) each."},
	quality(),
	enumOrEmpty("ratio", Ratios, "", "Output aspect ratio; empty keeps the model image's."),
}}

var modelCreateRules = &Object{Variant: "type", Fields: []Field{
	{Name: "type", Kind: KindEnum, Enum: ModelCreateTypes, Required: true, Doc: "generate: a new model from a description; upload: store a photo as a model."},
	text("name", true, MaxNameChars, "The saved model's name."),
	{Name: "imageBase64", Kind: KindDataImage, Required: true, When: ModelCreateUpload, Doc: "The photo as a data:image/<type>;base64, URI."},
	{Name: "faceModelId", Kind: KindID, When: ModelCreateGenerate, Doc: "A saved model whose face to keep (GET /v1/models/saved)."},
	{Name: "prompt", Kind: KindText, Required: true, RequiredUnless: "faceModelId", MaxChars: MaxPromptChars, When: ModelCreateGenerate, Doc: "The model in words; may be omitted when faceModelId is given."},
	{Name: "gender", Kind: KindText, MaxChars: MaxShortTextChars, When: ModelCreateGenerate},
	{Name: "bodyType", Kind: KindText, MaxChars: MaxShortTextChars, When: ModelCreateGenerate},
	{Name: "clothing", Kind: KindText, MaxChars: MaxShortTextChars, When: ModelCreateGenerate},
	{Name: "pose", Kind: KindText, MaxChars: MaxShortTextChars, When: ModelCreateGenerate},
	{Name: "poseModelId", Kind: KindID, When: ModelCreateGenerate, Doc: "A saved model whose pose to use."},
	{Name: "poseImageBase64", Kind: KindDataImage, When: ModelCreateGenerate, ConflictsWith: "poseModelId", ConflictNote: "the pose image replaces a saved pose model", Doc: "A pose image as a data URI (not together with poseModelId)."},
	quality(),
	enum("aspectRatio", Ratios, "3:4", "Output aspect ratio."),
	{Name: "sampleCount", Kind: KindInt, Default: 1, Min: 1, Max: MaxSampleCount, MaxWhen: map[string]int{ModelCreateUpload: 1}, Doc: "Number of models to generate (1 for an upload)."},
}}

var productToModelRules = &Object{Fields: []Field{
	image("productImage", true, "The product (garment) image."),
	text("customPrompt", false, MaxCustomPrompt, "Optional extra direction."),
	image("modelImageUrl", false, "An optional model to wear the product."),
	enumOrEmpty("styleId", StyleIDs, "", "An optional photographic style."),
	quality(),
	sampleCount(),
	enumOrEmpty("ratio", Ratios, "3:4", "Output aspect ratio."),
}}

var angleGenerationRules = &Object{Fields: []Field{
	image("imageUrl", true, "The subject to see from other angles."),
	{Name: "angleIds", Kind: KindAngles, Required: true, Enum: AngleIDs, Min: 1, Max: MaxAngles, Noun: "angle", Doc: "The angles, each at most once; one image (and the quality's price) each."},
	quality(),
	enumOrEmpty("ratio", Ratios, "", "Output aspect ratio; empty keeps the input's."),
	{Name: "return_base64", Kind: KindBool, Default: false, Doc: "Return the images as data URIs instead of URLs."},
}}

var tryOnRules = &Object{Fields: []Field{
	image("personImage", true, "The person."),
	image("garmentImage", true, "The garment."),
	enum("accuracy", Accuracies, "standard", "Speed/accuracy trade-off."),
	sampleCount(),
}}

var imageToVideoRules = &Object{Fields: []Field{
	image("imageUrl", true, "The still to animate."),
	text("prompt", false, MaxPromptChars, "Optional motion direction."),
	{Name: "duration", Kind: KindInt, Default: 6, Min: 0, Max: math.MaxInt32, Ints: VideoDurations, Unit: "seconds", Doc: "Video length in seconds (4, 6 or 8: 6, 9 or 12 credits)."},
	enum("aspectRatio", VideoAspectRatios, "9:16", "Video aspect ratio."),
	{Name: "generateAudio", Kind: KindBool, Default: true, Doc: "Add a sound track."},
}}
