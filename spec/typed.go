package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Inputs is a model's normalised inputs: a pointer to one of the seven
// input types (*TryOnInputs, ...). The API's validation produces it, the
// job system stores it (its images as blob references) and the model's
// pipeline receives it: the inputs are decoded once, at the API.
type Inputs interface {
	// ModelName is the model whose inputs these are.
	ModelName() string
}

// ModelName implements Inputs.
func (*PromptTryOnInputs) ModelName() string     { return ModelPromptTryOn }
func (*PoseControlInputs) ModelName() string     { return ModelPoseControl }
func (*ModelCreateInputs) ModelName() string     { return ModelModelCreate }
func (*ProductToModelInputs) ModelName() string  { return ModelProductToModel }
func (*AngleGenerationInputs) ModelName() string { return ModelAngleGeneration }
func (*TryOnInputs) ModelName() string           { return ModelTryOn }
func (*ImageToVideoInputs) ModelName() string    { return ModelImageToVideo }

// NewInputs returns a zero value of the model's input type (nil for an
// unknown model).
func NewInputs(model string) Inputs {
	switch model {
	case ModelPromptTryOn:
		return new(PromptTryOnInputs)
	case ModelPoseControl:
		return new(PoseControlInputs)
	case ModelModelCreate:
		return new(ModelCreateInputs)
	case ModelProductToModel:
		return new(ProductToModelInputs)
	case ModelAngleGeneration:
		return new(AngleGenerationInputs)
	case ModelTryOn:
		return new(TryOnInputs)
	case ModelImageToVideo:
		return new(ImageToVideoInputs)
	}
	return nil
}

// DecodeInputs decodes a model's inputs JSON with the spec's defaults
// applied (see Decode): for inputs that do not come through the API (the
// CLI's bench, tests). Inputs the API validated are already typed.
func DecodeInputs(model string, raw json.RawMessage) (Inputs, error) {
	in := NewInputs(model)
	if in == nil {
		return nil, unknownModel(model)
	}
	if err := Decode(model, raw, in); err != nil {
		return nil, err
	}
	return in, nil
}

// Encode is the canonical JSON of normalised inputs (no HTML escaping):
// what a job record keeps and an idempotency fingerprint hashes.
func Encode(in Inputs) ([]byte, error) { return marshalPlain(in) }

// Unmarshal reads inputs that Encode wrote (a job record's, already
// normalised: no defaults are applied again) into the model's type.
func Unmarshal(model string, b []byte) (Inputs, error) {
	in := NewInputs(model)
	if in == nil {
		return nil, unknownModel(model)
	}
	if err := json.Unmarshal(b, in); err != nil {
		return nil, fmt.Errorf("spec: stored inputs of %s: %v", model, err)
	}
	return in, nil
}

// FieldPointers maps the JSON name of each field of the struct ptr points
// to (an input type, a Pose) to a pointer to the field (*string, *int,
// *bool, *[]Pose, *[]string): where the API's rule interpreter stores each
// checked value, and what Cost and Images read.
func FieldPointers(ptr any) map[string]any {
	rv := reflect.ValueOf(ptr).Elem()
	rt := rv.Type()
	out := make(map[string]any, rt.NumField())
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out[name] = rv.Field(i).Addr().Interface()
	}
	return out
}

// ImageRef is one image reference of an inputs value: a URL, a data URI,
// or (once the job system stored it) a blob reference.
type ImageRef struct {
	Field string  // the JSON path, "inputs.personImage", "inputs.poses[1].cdnUrl"
	Ref   *string // the reference in the inputs value ("" not given)
}

// Images lists the image fields of in by the rule table (image and
// data-image kinds, in pose items too), in table order.
func Images(in Inputs) []ImageRef {
	m, ok := Lookup(in.ModelName())
	if !ok {
		return nil
	}
	return imageRefs("inputs", m.Inputs, FieldPointers(in))
}

func imageRefs(path string, rules *Object, fields map[string]any) []ImageRef {
	var out []ImageRef
	for _, f := range rules.Fields {
		switch f.Kind {
		case KindImage, KindDataImage:
			if p, ok := fields[f.Name].(*string); ok {
				out = append(out, ImageRef{Field: path + "." + f.Name, Ref: p})
			}
		case KindPoses:
			poses, _ := fields[f.Name].(*[]Pose)
			for i := range *poses {
				out = append(out, imageRefs(fmt.Sprintf("%s.%s[%d]", path, f.Name, i), f.Items, FieldPointers(&(*poses)[i]))...)
			}
		}
	}
	return out
}
