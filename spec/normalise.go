package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Normalise applies the spec's defaults to a model's inputs and returns them
// as the canonical JSON of the model's input type: what the API's
// validation hands a job, for callers that run a pipeline directly (the
// CLI's bench, tests). A field absent or null takes its default, as does
// "" for a field where empty means "not given" (ratio, styleId). It refuses
// an unknown model, a field outside the model's table and a value of the
// wrong JSON type; the table's other rules (ranges, value sets, lengths,
// image references) are checked by package api's validator, not here.
// Normalise of normalised inputs returns them unchanged.
func Normalise(model string, raw json.RawMessage) (json.RawMessage, error) {
	m, ok := Lookup(model)
	if !ok {
		return nil, unknownModel(model)
	}
	typed := m.newInputs()
	if err := Decode(model, raw, typed); err != nil {
		return nil, err
	}
	return marshalPlain(typed)
}

// Decode decodes a model's inputs into dst (a pointer to the model's input
// type) with the spec's defaults applied as Normalise applies them: a
// pipeline decodes its job's inputs with it, so inputs that did not come
// through the API get the same defaults from the same table.
func Decode(model string, raw json.RawMessage, dst any) error {
	m, ok := Lookup(model)
	if !ok {
		return unknownModel(model)
	}
	in := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 && !isNull(raw) {
		if err := json.Unmarshal(raw, &in); err != nil {
			return fmt.Errorf("spec: inputs of %s must be a JSON object: %v", model, err)
		}
	}
	names := m.Inputs.Names()
	for k := range in {
		if !slices.Contains(names, k) {
			return fmt.Errorf("spec: inputs.%s is not an input of %s", k, model)
		}
	}
	if err := applyDefaults(m.Inputs, in); err != nil {
		return err
	}
	filled, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("spec: inputs of %s: %v", model, err)
	}
	if err := json.Unmarshal(filled, dst); err != nil {
		return fmt.Errorf("spec: inputs of %s: %v", model, err)
	}
	return nil
}

func unknownModel(model string) error {
	return fmt.Errorf("spec: model_name %q is not one of %s", model, strings.Join(ModelNames, ", "))
}

// applyDefaults sets each field of rules that has a default and is not
// given in in.
func applyDefaults(rules *Object, in map[string]json.RawMessage) error {
	for _, f := range rules.Fields {
		if f.Default == nil {
			continue
		}
		raw, given := in[f.Name]
		if given && !isNull(raw) && !(f.Kind == KindEnumOrEmpty && string(bytes.TrimSpace(raw)) == `""`) {
			continue
		}
		b, err := json.Marshal(f.Default)
		if err != nil {
			return fmt.Errorf("spec: default of %s: %v", f.Name, err)
		}
		in[f.Name] = b
	}
	return nil
}

// newInputs returns a pointer to a zero value of the model's input type.
func (m *Model) newInputs() any {
	switch m.Name {
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
	panic("spec: no input type for " + m.Name)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
