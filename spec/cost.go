package spec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Cost is the credit cost of a job from its inputs (normalised or raw;
// missing fields take their defaults), by the model's Pricing:
// QualityCredits (1k=1, 2k=3, 4k=5) times sampleCount for prompt-tryon,
// product-to-model and model-create, times the number of poses for
// pose-control, times the number of angles for angle-generation; 1 x
// sampleCount for tryon; 6/9/12 for a 4/6/8 s video.
func Cost(model string, inputs json.RawMessage) (int, error) {
	m, ok := Lookup(model)
	if !ok {
		return 0, fmt.Errorf("model_name %q has no cost rule", model)
	}
	in, err := costFields(inputs)
	if err != nil {
		return 0, err
	}
	unit, err := m.unitPrice(in)
	if err != nil {
		return 0, err
	}
	n, err := m.count(in)
	if err != nil {
		return 0, err
	}
	return unit * n, nil
}

// costFields reads the fields a Pricing can name. Only these are decoded:
// the inputs also hold images of up to 25 MB that must not be copied.
func costFields(inputs json.RawMessage) (map[string]json.RawMessage, error) {
	var in struct {
		Quality     json.RawMessage `json:"quality"`
		Duration    json.RawMessage `json:"duration"`
		SampleCount json.RawMessage `json:"sampleCount"`
		Poses       json.RawMessage `json:"poses"`
		AngleIDs    json.RawMessage `json:"angleIds"`
	}
	if err := json.Unmarshal(inputs, &in); err != nil {
		return nil, fmt.Errorf("inputs: cannot read the cost fields: %v", err)
	}
	out := map[string]json.RawMessage{}
	for name, raw := range map[string]json.RawMessage{"quality": in.Quality, "duration": in.Duration,
		"sampleCount": in.SampleCount, "poses": in.Poses, "angleIds": in.AngleIDs} {
		if raw != nil {
			out[name] = raw
		}
	}
	return out, nil
}

// unitPrice is the price of one counted unit.
func (m *Model) unitPrice(in map[string]json.RawMessage) (int, error) {
	switch {
	case m.Pricing.ByQuality:
		q := DefaultQuality
		if err := costField(in, "quality", &q); err != nil {
			return 0, err
		}
		c, ok := QualityCredits[q]
		if !ok {
			return 0, fmt.Errorf("inputs.quality must be one of %s, got %q", strings.Join(Qualities, ", "), q)
		}
		return c, nil
	case m.Pricing.ByDuration:
		f := m.Inputs.Field("duration")
		d, _ := f.Default.(int)
		if err := costField(in, f.Name, &d); err != nil {
			return 0, err
		}
		c, ok := VideoCredits[d]
		if !ok {
			return 0, fmt.Errorf("inputs.duration must be %s, got %d", JoinOr(IntsText(f.Ints)), d)
		}
		return c, nil
	}
	return m.Pricing.FlatCredits, nil
}

// count is the number of priced units: the value of an integer count field
// or the length of an array count field, within the field's range.
func (m *Model) count(in map[string]json.RawMessage) (int, error) {
	if m.Pricing.CountField == "" {
		return 1, nil
	}
	f := m.Inputs.Field(m.Pricing.CountField)
	if f.Kind == KindInt {
		n, _ := f.Default.(int)
		if err := costField(in, f.Name, &n); err != nil {
			return 0, err
		}
		if n < f.Min || n > f.Max {
			return 0, fmt.Errorf("inputs.%s must be from %d to %d, got %d", f.Name, f.Min, f.Max, n)
		}
		return n, nil
	}
	var items []json.RawMessage
	if err := costField(in, f.Name, &items); err != nil {
		return 0, err
	}
	if len(items) < f.Min || len(items) > f.Max {
		return 0, fmt.Errorf("inputs.%s must hold %d to %d %ss, got %d", f.Name, f.Min, f.Max, f.Noun, len(items))
	}
	return len(items), nil
}

// costField decodes in[name] into dst unless it is absent or null (dst
// keeps its default).
func costField(in map[string]json.RawMessage, name string, dst any) error {
	raw, ok := in[name]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("inputs: cannot read the cost fields: %s: %v", name, err)
	}
	return nil
}

// JoinOr joins words as the spec lists alternatives: "a, b or c" ("a or b"
// for two).
func JoinOr(words []string) string { return join(words, " or ") }

// JoinAnd joins words as "a, b and c".
func JoinAnd(words []string) string { return join(words, " and ") }

func join(words []string, last string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + last + words[len(words)-1]
}

// IntsText writes each integer in decimal.
func IntsText(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = itoa(n)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
