package spec

import (
	"encoding/json"
	"strings"
	"testing"
)

// "Default ..." sentences of every inputs table: Normalise applies them and
// writes the canonical JSON of the model's input type.
func TestSpec_DefaultsOfEveryModel(t *testing.T) {
	tests := []struct{ model, in, want string }{
		{"prompt-tryon", `{"personImage":"p","prompt":"a red top"}`,
			`{"personImage":"p","prompt":"a red top","quality":"1k","sampleCount":1,"ratio":"","modelImageUrl":"","styleId":""}`},
		{"pose-control", `{"modelImage":"m","poses":[{"type":"custom","text":"arms up"}],"ratio":null}`,
			`{"modelImage":"m","poses":[{"type":"custom","text":"arms up"}],"quality":"1k","ratio":""}`},
		{"model-create", `{"type":"upload","name":"n","imageBase64":"data:image/png;base64,AA=="}`,
			`{"type":"upload","name":"n","prompt":"","imageBase64":"data:image/png;base64,AA==","gender":"","bodyType":"","clothing":"","pose":"","faceModelId":"","poseModelId":"","poseImageBase64":"","quality":"1k","aspectRatio":"3:4","sampleCount":1}`},
		{"product-to-model", `{"productImage":"p","ratio":""}`,
			`{"productImage":"p","customPrompt":"","modelImageUrl":"","styleId":"","quality":"1k","sampleCount":1,"ratio":"3:4"}`},
		{"angle-generation", `{"imageUrl":"i","angleIds":["back"]}`,
			`{"imageUrl":"i","angleIds":["back"],"quality":"1k","ratio":"","return_base64":false}`},
		{"tryon", `{"personImage":"p","garmentImage":"g"}`,
			`{"personImage":"p","garmentImage":"g","accuracy":"standard","sampleCount":1}`},
		{"image-to-video", `{"imageUrl":"i"}`,
			`{"imageUrl":"i","prompt":"","duration":6,"aspectRatio":"9:16","generateAudio":true}`},
	}
	for _, tt := range tests {
		got, err := Normalise(tt.model, json.RawMessage(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Normalise(%s, %s) =\n %s, %v\nwant\n %s", tt.model, tt.in, got, err, tt.want)
			continue
		}
		again, err := Normalise(tt.model, got)
		if err != nil || string(again) != string(got) {
			t.Errorf("Normalise is not idempotent on %s: %s, %v", got, again, err)
		}
	}
}

// Given values are kept, "&" in URLs is not escaped, and what is not the
// model's is refused.
func TestNormaliseKeepsValuesAndRefusesStrangers(t *testing.T) {
	got, err := Normalise(ModelTryOn, json.RawMessage(`{"personImage":"https://x.test/a?b=1&c=2","garmentImage":"g","accuracy":"hyper","sampleCount":3}`))
	want := `{"personImage":"https://x.test/a?b=1&c=2","garmentImage":"g","accuracy":"hyper","sampleCount":3}`
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
	bad := []struct{ model, in, want string }{
		{"virtual-tryon", `{}`, `model_name "virtual-tryon" is not one of prompt-tryon`},
		{ModelTryOn, `{"personImage":"p","colour":"red"}`, "inputs.colour is not an input of tryon"},
		{ModelTryOn, `{"sampleCount":"2"}`, "inputs of tryon"},
		{ModelTryOn, `[1]`, "must be a JSON object"},
	}
	for _, b := range bad {
		if _, err := Normalise(b.model, json.RawMessage(b.in)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Normalise(%s, %s) error %v, want %q", b.model, b.in, err, b.want)
		}
	}
}

// FuzzNormalise: any inputs are normalised or refused, never a panic; what
// is normalised normalises to itself and has a cost or a cost error.
func FuzzNormalise(f *testing.F) {
	for _, m := range ModelNames {
		f.Add(m, `{}`)
	}
	f.Add(ModelPromptTryOn, `{"sampleCount":null,"ratio":"","quality":"2k"}`)
	f.Add(ModelPoseControl, `{"poses":[{"type":"template","cdnUrl":"u","title":""}]}`)
	f.Add(ModelImageToVideo, `{"duration":1e400}`)
	f.Fuzz(func(t *testing.T, model, in string) {
		got, err := Normalise(model, json.RawMessage(in))
		if err != nil {
			return
		}
		again, err := Normalise(model, got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("Normalise(%s) = %s, then %s, %v", in, got, again, err)
		}
		typed, err := Unmarshal(model, got)
		if err != nil {
			t.Fatalf("Unmarshal(Normalise(%s)): %v", in, err)
		}
		_, _ = Cost(typed)
	})
}
