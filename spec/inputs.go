package spec

import (
	"bytes"
	"encoding/json"
)

// Normalised job inputs (Inputs): what the API's validation (and
// DecodeInputs) produces, what a job's Request.Inputs holds and what each
// pipeline reads. Field names are the spec's; the spec's defaults are
// applied; "" means "not given". One definition serves both sides so the
// wire contract cannot drift.

// PromptTryOnInputs are prompt-tryon's normalised inputs.
type PromptTryOnInputs struct {
	PersonImage   string `json:"personImage"`
	Prompt        string `json:"prompt"`
	Quality       string `json:"quality"`
	SampleCount   int    `json:"sampleCount"`
	Ratio         string `json:"ratio"`
	ModelImageURL string `json:"modelImageUrl"`
	StyleID       string `json:"styleId"`
}

// PoseControlInputs are pose-control's normalised inputs.
type PoseControlInputs struct {
	ModelImage string `json:"modelImage"`
	Poses      []Pose `json:"poses"`
	Quality    string `json:"quality"`
	Ratio      string `json:"ratio"`
}

// Pose is one pose object. A template pose has CDNURL (and maybe Title); a
// custom pose has Text. MarshalJSON writes only the fields of its type.
type Pose struct {
	Type   string `json:"type"`
	CDNURL string `json:"cdnUrl,omitempty"`
	Title  string `json:"title,omitempty"`
	Text   string `json:"text,omitempty"`
}

// MarshalJSON writes {type, cdnUrl, title} for templates (title "" when not
// given) and {type, text} for custom poses.
func (p Pose) MarshalJSON() ([]byte, error) {
	if p.Type == PoseCustom {
		return marshalPlain(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{p.Type, p.Text})
	}
	return marshalPlain(struct {
		Type   string `json:"type"`
		CDNURL string `json:"cdnUrl"`
		Title  string `json:"title"`
	}{p.Type, p.CDNURL, p.Title})
}

// ModelCreateInputs are model-create's normalised inputs.
type ModelCreateInputs struct {
	Type            string `json:"type"`
	Name            string `json:"name"`
	Prompt          string `json:"prompt"`
	ImageBase64     string `json:"imageBase64"`
	Gender          string `json:"gender"`
	BodyType        string `json:"bodyType"`
	Clothing        string `json:"clothing"`
	Pose            string `json:"pose"`
	FaceModelID     string `json:"faceModelId"`
	PoseModelID     string `json:"poseModelId"`
	PoseImageBase64 string `json:"poseImageBase64"`
	Quality         string `json:"quality"`
	AspectRatio     string `json:"aspectRatio"`
	SampleCount     int    `json:"sampleCount"`
}

// ProductToModelInputs are product-to-model's normalised inputs.
type ProductToModelInputs struct {
	ProductImage  string `json:"productImage"`
	CustomPrompt  string `json:"customPrompt"`
	ModelImageURL string `json:"modelImageUrl"`
	StyleID       string `json:"styleId"`
	Quality       string `json:"quality"`
	SampleCount   int    `json:"sampleCount"`
	Ratio         string `json:"ratio"`
}

// AngleGenerationInputs are angle-generation's normalised inputs.
type AngleGenerationInputs struct {
	ImageURL     string   `json:"imageUrl"`
	AngleIDs     []string `json:"angleIds"`
	Quality      string   `json:"quality"`
	Ratio        string   `json:"ratio"`
	ReturnBase64 bool     `json:"return_base64"`
}

// TryOnInputs are tryon's normalised inputs.
type TryOnInputs struct {
	PersonImage  string `json:"personImage"`
	GarmentImage string `json:"garmentImage"`
	Accuracy     string `json:"accuracy"`
	SampleCount  int    `json:"sampleCount"`
}

// ImageToVideoInputs are image-to-video's normalised inputs.
type ImageToVideoInputs struct {
	ImageURL      string `json:"imageUrl"`
	Prompt        string `json:"prompt"`
	Duration      int    `json:"duration"`
	AspectRatio   string `json:"aspectRatio"`
	GenerateAudio bool   `json:"generateAudio"`
}

// marshalPlain encodes without HTML escaping (URLs keep their '&').
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
