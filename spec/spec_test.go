package spec

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The tests are named after the sentences of ../shared/spec/interface.md,
// one test per sentence, each table-driven over Table.

// "Models: prompt-tryon, pose-control, model-create, product-to-model,
// angle-generation, tryon, image-to-video."
func TestSpec_SevenModelsInTheSpecsOrder(t *testing.T) {
	want := []string{"prompt-tryon", "pose-control", "model-create", "product-to-model", "angle-generation", "tryon", "image-to-video"}
	if !slices.Equal(ModelNames, want) {
		t.Fatalf("ModelNames = %v, want %v", ModelNames, want)
	}
	for i, m := range Table {
		if m.Name != want[i] || m.Inputs == nil {
			t.Errorf("Table[%d] = %s (inputs %v), want %s with input rules", i, m.Name, m.Inputs != nil, want[i])
		}
	}
	if Known("virtual-tryon") || Lifecycle("virtual-tryon") != "" {
		t.Error("an unknown name is known")
	}
}

// "Each model has a lifecycle label: stable for prompt-tryon, pose-control,
// model-create, product-to-model, angle-generation and tryon; experimental
// for image-to-video."
func TestSpec_LifecycleStableButImageToVideoExperimental(t *testing.T) {
	want := map[string]string{"prompt-tryon": "stable", "pose-control": "stable", "model-create": "stable",
		"product-to-model": "stable", "angle-generation": "stable", "tryon": "stable", "image-to-video": "experimental"}
	for _, m := range Table {
		if got := Lifecycle(m.Name); got != want[m.Name] {
			t.Errorf("Lifecycle(%s) = %q, want %q", m.Name, got, want[m.Name])
		}
	}
}

// "Response status code by model": 200 OK for prompt-tryon, tryon and
// image-to-video; 201 Created for the others.
func TestSpec_SubmitStatus200Or201ByModel(t *testing.T) {
	want := map[string]int{"prompt-tryon": 200, "tryon": 200, "image-to-video": 200,
		"pose-control": 201, "model-create": 201, "product-to-model": 201, "angle-generation": 201}
	for _, m := range Table {
		if got := SubmitStatus(m.Name); got != want[m.Name] {
			t.Errorf("SubmitStatus(%s) = %d, want %d", m.Name, got, want[m.Name])
		}
	}
	if SubmitStatus("nope") != http.StatusCreated {
		t.Error("unknown model")
	}
}

// "For prompt-tryon the completed status value is the string success. For
// pose-control, model-create, product-to-model and angle-generation it is
// succeeded." (tryon and image-to-video: not stated; succeeded here.)
func TestSpec_PromptTryOnSucceedsWithSuccessOthersWithSucceeded(t *testing.T) {
	for _, m := range Table {
		want := "succeeded"
		if m.Name == "prompt-tryon" {
			want = "success"
		}
		if got := SuccessStatus(m.Name); got != want {
			t.Errorf("SuccessStatus(%s) = %q, want %q", m.Name, got, want)
		}
	}
}

// "Job status values seen: starting, succeeded, success, error." (canceled
// is this service's addition.)
func TestSpec_StatusValuesStartingSucceededSuccessError(t *testing.T) {
	want := []string{"starting", "succeeded", "success", "error", "canceled"}
	if !slices.Equal(StatusWords, want) {
		t.Fatalf("StatusWords = %v, want %v", StatusWords, want)
	}
}

// fieldsNamed returns every model's rule named name.
func fieldsNamed(name string) map[string]Field {
	out := map[string]Field{}
	for _, m := range Table {
		for _, f := range m.Inputs.Fields {
			if f.Name == name {
				out[m.Name] = f
			}
		}
	}
	return out
}

// "sampleCount: 1 to 4 (prompt-tryon, product-to-model, tryon). Default 1."
// (model-create: range not shown; the same range here, 1 for an upload.)
func TestSpec_SampleCountIsOneToFourDefaultOne(t *testing.T) {
	got := fieldsNamed("sampleCount")
	for _, model := range []string{"prompt-tryon", "product-to-model", "tryon", "model-create"} {
		f, ok := got[model]
		if !ok || f.Kind != KindInt || f.Min != 1 || f.Max != 4 || f.Default != 1 {
			t.Errorf("%s sampleCount = %+v, want an integer 1..4 default 1", model, f)
		}
	}
	if len(got) != 4 {
		t.Errorf("sampleCount on %d models, want 4", len(got))
	}
	if got["model-create"].MaxWhen["upload"] != 1 {
		t.Error("model-create upload: sampleCount must be at most 1")
	}
}

// "customPrompt is at most 500 characters" (product-to-model).
func TestSpec_CustomPromptAtMost500Characters(t *testing.T) {
	f := InputRules("product-to-model").Field("customPrompt")
	if f.Kind != KindText || f.MaxChars != 500 || f.Required {
		t.Fatalf("customPrompt = %+v, want optional text of at most 500", f)
	}
}

// "quality: '1k', '2k', '4k' (default '1k')" on every model that has one.
func TestSpec_QualityIs1k2k4kDefault1k(t *testing.T) {
	got := fieldsNamed("quality")
	for _, model := range []string{"prompt-tryon", "pose-control", "model-create", "product-to-model", "angle-generation"} {
		f := got[model]
		if f.Kind != KindEnum || !slices.Equal(f.Enum, []string{"1k", "2k", "4k"}) || f.Default != "1k" {
			t.Errorf("%s quality = %+v", model, f)
		}
	}
	if len(got) != 5 {
		t.Errorf("quality on %d models, want 5 (not tryon, not image-to-video)", len(got))
	}
}

// "ratio / aspectRatio: '1:1', '3:4', '4:3', '9:16', '16:9', '2:3', '3:2',
// '4:5', '5:4', '21:9' (image models). image-to-video accepts only '16:9'
// and '9:16'." Defaults: model-create '3:4', product-to-model '3:4' when
// empty, image-to-video '9:16'; the others keep the input's when empty.
func TestSpec_RatioSetAndDefaults(t *testing.T) {
	ratios := []string{"1:1", "3:4", "4:3", "9:16", "16:9", "2:3", "3:2", "4:5", "5:4", "21:9"}
	tests := []struct {
		model, field string
		set          []string
		kind         Kind
		def          any
	}{
		{"prompt-tryon", "ratio", ratios, KindEnumOrEmpty, nil},
		{"pose-control", "ratio", ratios, KindEnumOrEmpty, nil},
		{"model-create", "aspectRatio", ratios, KindEnum, "3:4"},
		{"product-to-model", "ratio", ratios, KindEnumOrEmpty, "3:4"},
		{"angle-generation", "ratio", ratios, KindEnumOrEmpty, nil},
		{"image-to-video", "aspectRatio", []string{"16:9", "9:16"}, KindEnum, "9:16"},
	}
	for _, tt := range tests {
		f := InputRules(tt.model).Field(tt.field)
		if !slices.Equal(f.Enum, tt.set) || f.Kind != tt.kind || f.Default != tt.def {
			t.Errorf("%s %s = %+v, want set %v kind %d default %v", tt.model, tt.field, f, tt.set, tt.kind, tt.def)
		}
	}
}

// "styleId: y2k, studio, iphone, professional, lifestyle, analog,
// streetwear, flash, movie, minimalist, ugc, editorial" (prompt-tryon; the
// same set for product-to-model, whose list is not shown).
func TestSpec_StyleIDsAreTheTwelveStyles(t *testing.T) {
	want := []string{"y2k", "studio", "iphone", "professional", "lifestyle", "analog", "streetwear", "flash", "movie", "minimalist", "ugc", "editorial"}
	got := fieldsNamed("styleId")
	for _, model := range []string{"prompt-tryon", "product-to-model"} {
		if f := got[model]; !slices.Equal(f.Enum, want) || f.Kind != KindEnumOrEmpty {
			t.Errorf("%s styleId = %+v", model, f)
		}
	}
}

// "angleIds element: front, back, leftSide, rightSide, left45, right45."
func TestSpec_AngleIDsAreTheSixAngles(t *testing.T) {
	f := InputRules("angle-generation").Field("angleIds")
	want := []string{"front", "back", "leftSide", "rightSide", "left45", "right45"}
	if !slices.Equal(f.Enum, want) || f.Kind != KindAngles || !f.Required || f.Min != 1 || f.Max != 6 {
		t.Fatalf("angleIds = %+v", f)
	}
}

// "accuracy (tryon): 'standard', 'high', 'hyper' (default 'standard')."
func TestSpec_AccuracyStandardHighHyperDefaultStandard(t *testing.T) {
	f := InputRules("tryon").Field("accuracy")
	if !slices.Equal(f.Enum, []string{"standard", "high", "hyper"}) || f.Default != "standard" {
		t.Fatalf("accuracy = %+v", f)
	}
}

// "duration: 4, 6 or 8. Default 6." and "generateAudio ... Default true."
func TestSpec_DurationIs4Or6Or8Default6AudioDefaultTrue(t *testing.T) {
	r := InputRules("image-to-video")
	if f := r.Field("duration"); !slices.Equal(f.Ints, []int{4, 6, 8}) || f.Default != 6 {
		t.Errorf("duration = %+v", f)
	}
	if f := r.Field("generateAudio"); f.Kind != KindBool || f.Default != true {
		t.Errorf("generateAudio = %+v", f)
	}
}

// The required fields of each model's inputs table.
func TestSpec_RequiredFieldsByModel(t *testing.T) {
	want := map[string][]string{
		"prompt-tryon":     {"personImage", "prompt"},
		"pose-control":     {"modelImage", "poses"},
		"model-create":     {"type", "name", "imageBase64", "prompt"},
		"product-to-model": {"productImage"},
		"angle-generation": {"imageUrl", "angleIds"},
		"tryon":            {"personImage", "garmentImage"},
		"image-to-video":   {"imageUrl"},
	}
	for _, m := range Table {
		var got []string
		for _, f := range m.Inputs.Fields {
			if f.Required {
				got = append(got, f.Name)
			}
		}
		if !slices.Equal(got, want[m.Name]) {
			t.Errorf("%s required %v, want %v", m.Name, got, want[m.Name])
		}
	}
}

// model-create: "prompt: required when type is generate ... May be omitted
// only if faceModelId is given"; "imageBase64: required when type is
// upload"; the other fields "Generate only"; poseImageBase64 is "used ...
// instead of a saved poseModelId".
func TestSpec_ModelCreateCrossFieldRules(t *testing.T) {
	r := InputRules("model-create")
	if r.Variant != "type" || !slices.Equal(r.Variants(), []string{"generate", "upload"}) {
		t.Fatalf("variant %q %v", r.Variant, r.Variants())
	}
	if f := r.Field("prompt"); f.When != "generate" || f.RequiredUnless != "faceModelId" {
		t.Errorf("prompt = %+v", f)
	}
	if f := r.Field("imageBase64"); f.When != "upload" || f.Kind != KindDataImage {
		t.Errorf("imageBase64 = %+v", f)
	}
	if f := r.Field("poseImageBase64"); f.ConflictsWith != "poseModelId" {
		t.Errorf("poseImageBase64 = %+v", f)
	}
	for _, name := range []string{"gender", "bodyType", "clothing", "pose", "faceModelId", "poseModelId"} {
		if r.Field(name).When != "generate" {
			t.Errorf("%s is not generate-only", name)
		}
	}
	if got := r.RequiredIn("upload"); !slices.Equal(got, []string{"name", "imageBase64"}) {
		t.Errorf("RequiredIn(upload) = %v", got)
	}
}

// "Pose object, template form: type, cdnUrl (required), title; custom
// form: type, text (required)."
func TestSpec_PoseIsTemplateWithCdnURLOrCustomWithText(t *testing.T) {
	if got := PoseRules.RequiredIn(PoseTemplate); !slices.Equal(got, []string{"cdnUrl"}) {
		t.Errorf("template requires %v", got)
	}
	if got := PoseRules.RequiredIn(PoseCustom); !slices.Equal(got, []string{"text"}) {
		t.Errorf("custom requires %v", got)
	}
	f := InputRules("pose-control").Field("poses")
	if f.Items != PoseRules || f.Min != 1 || f.Max != MaxPoses {
		t.Errorf("poses = %+v", f)
	}
}

// jsonNames lists the JSON field names of the struct ptr points to.
func jsonNames(ptr any) []string {
	rt := reflect.TypeOf(ptr).Elem()
	var out []string
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// Each model's input type has exactly the fields of its inputs table (and
// a pose's type those of the pose table): the validator stores every
// checked field in it and Normalise writes it.
func TestSpec_InputTypesMatchTheTable(t *testing.T) {
	for _, m := range Table {
		got, want := jsonNames(NewInputs(m.Name)), m.Inputs.Names()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: input type fields %v, table %v", m.Name, got, want)
		}
	}
	got, want := jsonNames(&Pose{}), PoseRules.Names()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("pose: type fields %v, table %v", got, want)
	}
	if NewInputs("virtual-tryon") != nil {
		t.Error("an input type for an unknown model")
	}
}

// "Image input format: the value is a publicly accessible URL, or a
// Base64-encoded image string ... with the standard data URI prefix. The
// model-create upload fails if only the raw encoded string is sent."
func TestSpec_ImagesAreURLOrDataURIUploadDataURIOnly(t *testing.T) {
	want := map[string]Kind{
		"prompt-tryon.personImage": KindImage, "prompt-tryon.modelImageUrl": KindImage,
		"pose-control.modelImage": KindImage, "pose.cdnUrl": KindImage,
		"model-create.imageBase64": KindDataImage, "model-create.poseImageBase64": KindDataImage,
		"product-to-model.productImage": KindImage, "product-to-model.modelImageUrl": KindImage,
		"angle-generation.imageUrl": KindImage, "tryon.personImage": KindImage, "tryon.garmentImage": KindImage,
		"image-to-video.imageUrl": KindImage,
	}
	got := map[string]Kind{}
	add := func(owner string, o *Object) {
		for _, f := range o.Fields {
			if f.Kind == KindImage || f.Kind == KindDataImage {
				got[owner+"."+f.Name] = f.Kind
			}
		}
	}
	for _, m := range Table {
		add(m.Name, m.Inputs)
	}
	add("pose", PoseRules)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("image fields %v, want %v", got, want)
	}
}
