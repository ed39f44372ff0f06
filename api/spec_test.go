package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"fashiond/fetch"
	"fashiond/spec"
)

// TestSpec_NormaliseAgreesWithValidate: the defaults a pipeline run without
// the API gets (spec.Normalise) are the ones Validate applies: on every
// accepted validation case, Normalise leaves Validate's output unchanged,
// and Normalise of the raw inputs, where it accepts them, gives the same
// bytes.
func TestSpec_NormaliseAgreesWithValidate(t *testing.T) {
	checked := 0
	try := func(model, inputs string) {
		norm, _, verr := validateJSON(model, json.RawMessage(inputs))
		if verr != nil {
			return
		}
		checked++
		again, err := spec.Normalise(model, norm)
		if err != nil || !bytes.Equal(again, norm) {
			t.Errorf("%s %s: Validate gave\n %s\nNormalise of that gave\n %s (%v)", model, inputs, norm, again, err)
		}
		if direct, err := spec.Normalise(model, json.RawMessage(inputs)); err == nil && !bytes.Equal(direct, norm) {
			t.Errorf("%s %s: Validate gave\n %s\nNormalise gave\n %s", model, inputs, norm, direct)
		}
	}
	for _, m := range spec.ModelNames {
		try(m, minimalInputs[m])
	}
	for _, tc := range validateCases {
		try(tc.model, tc.inputs)
	}
	t.Logf("%d accepted cases compared", checked)
	if checked < len(spec.ModelNames) {
		t.Fatalf("only %d accepted cases compared", checked)
	}
}

// TestSpec_ImageAtMost25MB: "Image size: 25MB maximum": the validator's
// default data URI bound is the spec's.
func TestSpec_ImageAtMost25MB(t *testing.T) {
	if fetch.DefaultMaxBytes != spec.MaxImageBytes || spec.MaxImageBytes != 25<<20 {
		t.Fatalf("fetch.DefaultMaxBytes %d, spec.MaxImageBytes %d, want 25 MiB", fetch.DefaultMaxBytes, spec.MaxImageBytes)
	}
}
