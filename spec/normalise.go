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
	typed, err := DecodeInputs(m.Name, raw)
	if err != nil {
		return nil, err
	}
	return Encode(typed)
}

// Decode decodes a model's inputs into dst (a pointer to the model's input
// type) with the spec's defaults applied as Normalise applies them, so
// inputs that did not come through the API (DecodeInputs) get the same
// defaults from the same table. Images in the inputs are copied once, into
// dst.
func Decode(model string, raw json.RawMessage, dst any) error {
	m, ok := Lookup(model)
	if !ok {
		return unknownModel(model)
	}
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		raw = json.RawMessage(`{}`)
	}
	var seen map[string]given
	if err := json.Unmarshal(raw, &seen); err != nil {
		return fmt.Errorf("spec: inputs of %s must be a JSON object: %v", model, err)
	}
	names := m.Inputs.Names()
	for k := range seen {
		if !slices.Contains(names, k) {
			return fmt.Errorf("spec: inputs.%s is not an input of %s", k, model)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("spec: inputs of %s: %v", model, err)
	}
	defaults, err := missingDefaults(m.Inputs, seen)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(defaults, dst); err != nil {
		return fmt.Errorf("spec: defaults of %s: %v", model, err)
	}
	return nil
}

// given records how an input field was given, without copying its value.
type given struct{ null, empty bool }

// UnmarshalJSON implements json.Unmarshaler.
func (g *given) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	g.null, g.empty = string(t) == "null", string(t) == `""`
	return nil
}

// missingDefaults is a JSON object of the defaults of the fields of rules
// that seen does not give: absent, null, or "" where empty means "not
// given".
func missingDefaults(rules *Object, seen map[string]given) (json.RawMessage, error) {
	out := map[string]any{}
	for _, f := range rules.Fields {
		g, ok := seen[f.Name]
		if f.Default == nil || ok && !g.null && !(f.Kind == KindEnumOrEmpty && g.empty) {
			continue
		}
		out[f.Name] = f.Default
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("spec: defaults: %v", err)
	}
	return b, nil
}

func unknownModel(model string) error {
	return fmt.Errorf("spec: model_name %q is not one of %s", model, strings.Join(ModelNames, ", "))
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
