package spec

import (
	"encoding/json"
	"slices"
	"testing"
)

// Images lists exactly the image fields of the rule table, pose items
// included, with pointers into the value.
func TestImagesFollowTheRuleTable(t *testing.T) {
	tests := []struct {
		model, in string
		want      []string
	}{
		{ModelTryOn, `{"personImage":"p","garmentImage":"g"}`, []string{"inputs.personImage=p", "inputs.garmentImage=g"}},
		{ModelPoseControl, `{"modelImage":"m","poses":[{"type":"custom","text":"t"},{"type":"template","cdnUrl":"c"}]}`,
			[]string{"inputs.modelImage=m", "inputs.poses[0].cdnUrl=", "inputs.poses[1].cdnUrl=c"}},
		{ModelModelCreate, `{"type":"upload","name":"n","imageBase64":"d"}`,
			[]string{"inputs.imageBase64=d", "inputs.poseImageBase64="}},
		{ModelImageToVideo, `{"imageUrl":"i"}`, []string{"inputs.imageUrl=i"}},
		{ModelPromptTryOn, `{"personImage":"p","prompt":"x","modelImageUrl":"u"}`, []string{"inputs.personImage=p", "inputs.modelImageUrl=u"}},
	}
	for _, tt := range tests {
		in, err := DecodeInputs(tt.model, json.RawMessage(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, im := range Images(in) {
			got = append(got, im.Field+"="+*im.Ref)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: images %q, want %q", tt.model, got, want)
		}
	}
	in := &TryOnInputs{PersonImage: "a"}
	*Images(in)[0].Ref = "blob:x"
	if in.PersonImage != "blob:x" {
		t.Error("an ImageRef does not point into the value")
	}
}

// Encode then Unmarshal gives the value back, for every model, and
// Unmarshal refuses an unknown model.
func TestEncodeUnmarshalRoundTrip(t *testing.T) {
	for _, m := range ModelNames {
		in, err := DecodeInputs(m, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if in.ModelName() != m {
			t.Errorf("%s: ModelName %s", m, in.ModelName())
		}
		b, err := Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(m, b)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Encode(back)
		if string(again) != string(b) {
			t.Errorf("%s: %s became %s", m, b, again)
		}
	}
	if _, err := Unmarshal("virtual-tryon", []byte(`{}`)); err == nil {
		t.Error("Unmarshal of an unknown model succeeded")
	}
}
