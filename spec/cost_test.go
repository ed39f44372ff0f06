package spec

import (
	"encoding/json"
	"strings"
	"testing"
)

// "Credit cost summary": prompt-tryon and product-to-model QualityCredits x
// sampleCount; pose-control x number of poses; angle-generation x number of
// angles; model-create by quality, per model; tryon 1 x sampleCount;
// image-to-video 4s: 6, 6s: 9, 8s: 12. "Three poses at 1k cost 3 credits;
// at 4k cost 15."
func TestSpec_CreditCostSummary(t *testing.T) {
	three := `[{"type":"custom","text":"a"},{"type":"custom","text":"b"},{"type":"custom","text":"c"}]`
	tests := []struct {
		model, in string
		want      int
	}{
		{"prompt-tryon", `{}`, 1},
		{"prompt-tryon", `{"quality":"2k","sampleCount":4}`, 12},
		{"product-to-model", `{"quality":"4k","sampleCount":2}`, 10},
		{"model-create", `{"quality":"2k","sampleCount":null}`, 3},
		{"pose-control", `{"poses":` + three + `}`, 3},
		{"pose-control", `{"quality":"4k","poses":` + three + `}`, 15},
		{"angle-generation", `{"quality":"1k","angleIds":["front","back","left45"]}`, 3},
		{"angle-generation", `{"quality":"4k","angleIds":["front","back","left45"]}`, 15},
		{"tryon", `{"sampleCount":3}`, 3},
		{"tryon", `{"accuracy":"hyper"}`, 1},
		{"image-to-video", `{"duration":4}`, 6},
		{"image-to-video", `{}`, 9},
		{"image-to-video", `{"duration":8}`, 12},
	}
	for _, tt := range tests {
		got, err := costOf(tt.model, tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Cost(%s, %s) = %d, %v; want %d", tt.model, tt.in, got, err, tt.want)
		}
	}
}

// Cost refuses inputs outside the table's ranges with a message naming the
// field and the rule.
func TestSpec_CostRefusesWhatTheRulesRefuse(t *testing.T) {
	tests := []struct{ model, in, want string }{
		{"prompt-tryon", `{"sampleCount":5}`, "inputs.sampleCount must be from 1 to 4, got 5"},
		{"tryon", `{"sampleCount":0}`, "inputs.sampleCount must be from 1 to 4, got 0"},
		{"prompt-tryon", `{"quality":"8k"}`, `inputs.quality must be one of 1k, 2k, 4k, got "8k"`},
		{"pose-control", `{"poses":[]}`, "inputs.poses must hold 1 to 8 poses, got 0"},
		{"angle-generation", `{}`, "inputs.angleIds must hold 1 to 6 angles, got 0"},
		{"image-to-video", `{"duration":5}`, "inputs.duration must be 4, 6 or 8, got 5"},
		{"prompt-tryon", `{"quality":""}`, `inputs.quality must be one of 1k, 2k, 4k, got ""`},
	}
	for _, tt := range tests {
		if _, err := costOf(tt.model, tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Cost(%s, %s) error %v, want %q", tt.model, tt.in, err, tt.want)
		}
	}
}

// costOf is the cost of a model's inputs given as JSON.
func costOf(model, in string) (int, error) {
	typed, err := DecodeInputs(model, json.RawMessage(in))
	if err != nil {
		return 0, err
	}
	return Cost(typed)
}

// Every field a model's Pricing names is a field of its input type of a
// kind Cost counts, and a priced quality or duration is one too.
func TestSpec_PricingNamesFieldsCostReads(t *testing.T) {
	for _, m := range Table {
		fields := FieldPointers(NewInputs(m.Name))
		if f := m.Pricing.CountField; f != "" {
			switch fields[f].(type) {
			case *int, *[]Pose, *[]string:
			default:
				t.Errorf("%s: Cost cannot count %s (%T)", m.Name, f, fields[f])
			}
		}
		if _, ok := fields["quality"].(*string); m.Pricing.ByQuality && !ok {
			t.Errorf("%s: priced by quality without a quality field", m.Name)
		}
		if _, ok := fields["duration"].(*int); m.Pricing.ByDuration && !ok {
			t.Errorf("%s: priced by duration without a duration field", m.Name)
		}
	}
}
