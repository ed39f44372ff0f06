package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// Cost is the credit cost of a job from its normalised inputs, by the
// model's Pricing: QualityCredits (1k=1, 2k=3, 4k=5) times sampleCount for
// prompt-tryon, product-to-model and model-create, times the number of
// poses for pose-control, times the number of angles for angle-generation;
// 1 x sampleCount for tryon; 6/9/12 for a 4/6/8 s video. It reads the
// typed value: nothing is parsed again.
func Cost(in Inputs) (int, error) {
	m, ok := Lookup(in.ModelName())
	if !ok {
		return 0, fmt.Errorf("model_name %q has no cost rule", in.ModelName())
	}
	fields := FieldPointers(in)
	unit, err := m.unitPrice(fields)
	if err != nil {
		return 0, err
	}
	n, err := m.count(fields)
	if err != nil {
		return 0, err
	}
	return unit * n, nil
}

// unitPrice is the price of one counted unit.
func (m *Model) unitPrice(fields map[string]any) (int, error) {
	switch {
	case m.Pricing.ByQuality:
		q := *fields["quality"].(*string)
		c, ok := QualityCredits[q]
		if !ok {
			return 0, fmt.Errorf("inputs.quality must be one of %s, got %q", strings.Join(Qualities, ", "), q)
		}
		return c, nil
	case m.Pricing.ByDuration:
		f := m.Inputs.Field("duration")
		d := *fields[f.Name].(*int)
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
func (m *Model) count(fields map[string]any) (int, error) {
	if m.Pricing.CountField == "" {
		return 1, nil
	}
	f := m.Inputs.Field(m.Pricing.CountField)
	var n int
	switch v := fields[f.Name].(type) {
	case *int:
		if n = *v; n < f.Min || n > f.Max {
			return 0, fmt.Errorf("inputs.%s must be from %d to %d, got %d", f.Name, f.Min, f.Max, n)
		}
		return n, nil
	case *[]Pose:
		n = len(*v)
	case *[]string:
		n = len(*v)
	default:
		return 0, fmt.Errorf("spec: the count field %s of %s is not an integer or an array", f.Name, m.Name)
	}
	if n < f.Min || n > f.Max {
		return 0, fmt.Errorf("inputs.%s must hold %d to %d %ss, got %d", f.Name, f.Min, f.Max, f.Noun, n)
	}
	return n, nil
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
