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
		{"tryon", `{"quality":"4k"}`, 1},
		{"image-to-video", `{"duration":4}`, 6},
		{"image-to-video", `{}`, 9},
		{"image-to-video", `{"duration":8}`, 12},
	}
	for _, tt := range tests {
		got, err := Cost(tt.model, json.RawMessage(tt.in))
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
		{"prompt-tryon", `{"sampleCount":"2"}`, "cannot read the cost fields"},
		{"prompt-tryon", `[]`, "cannot read the cost fields"},
		{"virtual-tryon", `{}`, `model_name "virtual-tryon" has no cost rule`},
	}
	for _, tt := range tests {
		if _, err := Cost(tt.model, json.RawMessage(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Cost(%s, %s) error %v, want %q", tt.model, tt.in, err, tt.want)
		}
	}
}

// Every field a model's Pricing names is one Cost reads.
func TestSpec_PricingNamesFieldsCostReads(t *testing.T) {
	for _, m := range Table {
		f := m.Pricing.CountField
		if f == "" {
			continue
		}
		in, err := costFields(json.RawMessage(`{"` + f + `":1}`))
		if err != nil || in[f] == nil {
			t.Errorf("%s: Cost does not read %s", m.Name, f)
		}
	}
}
