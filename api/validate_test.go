package api

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fashiond/fetch"
	"fashiond/spec"
)

const (
	img  = "https://example.com/person.jpg"
	img2 = "https://cdn.example.com/garment.png?sig=a&b=c"
	// A small valid data URI (PNG signature, valid base64).
	dataPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	rawB64  = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

func testdataURI(t testing.TB, rel, mt string) string {
	t.Helper()
	dir := os.Getenv("FASHIOND_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "testdata")
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
}

type vcase struct {
	name   string
	model  string
	inputs string
	code   string // "" = valid
	field  string
	msg    string // substring of the message
}

var validateCases = []vcase{
	// ---- common ----
	{"unknown model", "virtual-tryon", `{}`, CodeUnknownModel, "model_name", "must be one of: prompt-tryon, pose-control, model-create, product-to-model, angle-generation, tryon, image-to-video"},
	{"empty model", "", `{}`, CodeMissingField, "model_name", "model_name is required"},
	{"inputs missing", "tryon", ``, CodeMissingField, "inputs", "inputs is required"},
	{"inputs null", "tryon", `null`, CodeMissingField, "inputs", "inputs is required"},
	{"inputs array", "tryon", `[]`, CodeInvalidType, "inputs", "inputs must be a JSON object, got an array"},
	{"inputs string", "tryon", `"x"`, CodeInvalidType, "inputs", "got a string"},

	// ---- prompt-tryon ----
	{"pt ok", "prompt-tryon", `{"personImage":"` + img + `","prompt":"a red silk dress"}`, "", "", ""},
	{"pt ok full", "prompt-tryon", `{"personImage":"` + dataPNG + `","prompt":"denim jacket","quality":"4k","sampleCount":4,"ratio":"21:9","modelImageUrl":"` + img2 + `","styleId":"editorial"}`, "", "", ""},
	{"pt ok nulls", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","quality":null,"ratio":"","styleId":"","modelImageUrl":null}`, "", "", ""},
	{"pt sampleCount 2.0", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","sampleCount":2.0}`, "", "", ""},
	{"pt missing person", "prompt-tryon", `{"prompt":"x"}`, CodeMissingField, "inputs.personImage", "inputs.personImage is required"},
	{"pt missing prompt", "prompt-tryon", `{"personImage":"` + img + `"}`, CodeMissingField, "inputs.prompt", "inputs.prompt is required"},
	{"pt empty prompt", "prompt-tryon", `{"personImage":"` + img + `","prompt":"   "}`, CodeEmptyValue, "inputs.prompt", "must not be empty"},
	{"pt prompt number", "prompt-tryon", `{"personImage":"` + img + `","prompt":42}`, CodeInvalidType, "inputs.prompt", "inputs.prompt must be a string, got a number"},
	{"pt person number", "prompt-tryon", `{"personImage":7,"prompt":"x"}`, CodeInvalidType, "inputs.personImage", "must be a string, got a number"},
	{"pt quality 8k", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","quality":"8k"}`, CodeInvalidValue, "inputs.quality", `must be one of 1k, 2k, 4k, got "8k"`},
	{"pt quality empty", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","quality":""}`, CodeInvalidValue, "inputs.quality", `got ""`},
	{"pt quality 1K", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","quality":"1K"}`, CodeInvalidValue, "inputs.quality", ""},
	{"pt sampleCount 0", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","sampleCount":0}`, CodeOutOfRange, "inputs.sampleCount", "must be an integer from 1 to 4, got 0"},
	{"pt sampleCount 5", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","sampleCount":5}`, CodeOutOfRange, "inputs.sampleCount", "got 5"},
	{"pt sampleCount 1.5", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","sampleCount":1.5}`, CodeInvalidType, "inputs.sampleCount", "must be an integer from 1 to 4, got 1.5"},
	{"pt sampleCount string", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","sampleCount":"2"}`, CodeInvalidType, "inputs.sampleCount", "got a string"},
	{"pt sampleCount huge", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","sampleCount":1e400}`, CodeInvalidType, "inputs.sampleCount", ""},
	{"pt ratio bad", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","ratio":"7:5"}`, CodeInvalidValue, "inputs.ratio", "1:1, 3:4, 4:3, 9:16, 16:9, 2:3, 3:2, 4:5, 5:4, 21:9"},
	{"pt style bad", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","styleId":"vaporwave"}`, CodeInvalidValue, "inputs.styleId", "y2k, studio, iphone"},
	{"pt model url bad", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","modelImageUrl":"ftp://x/y.jpg"}`, CodeInvalidURL, "inputs.modelImageUrl", `scheme "ftp"`},
	{"pt unknown key", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","seed":3}`, CodeUnknownField, "inputs.seed", "accepted inputs: modelImageUrl, personImage, prompt, quality, ratio, sampleCount, styleId"},
	{"pt raw base64", "prompt-tryon", `{"personImage":"` + rawB64 + `","prompt":"x"}`, CodeMissingDataURIPrefix, "inputs.personImage", "without the data URI prefix"},
	{"pt relative url", "prompt-tryon", `{"personImage":"person.jpg","prompt":"x"}`, CodeInvalidURL, "inputs.personImage", "not absolute"},
	{"pt data not image", "prompt-tryon", `{"personImage":"data:text/plain;base64,aGVsbG8=","prompt":"x"}`, CodeInvalidImage, "inputs.personImage", "media type is text/plain"},
	{"pt data bad b64", "prompt-tryon", `{"personImage":"data:image/png;base64,@@@","prompt":"x"}`, CodeInvalidImage, "inputs.personImage", "base64 data is invalid"},
	{"pt metadata url", "prompt-tryon", `{"personImage":"http://169.254.169.254/latest/meta-data/","prompt":"x"}`, CodeURLRefused, "inputs.personImage", "link-local"},
	{"pt prompt too long", "prompt-tryon", `{"personImage":"` + img + `","prompt":"` + strings.Repeat("é", spec.MaxPromptChars+1) + `"}`, CodeTooLong, "inputs.prompt", "2001 characters long, the limit is 2000"},

	// ---- pose-control ----
	{"pc ok", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"template","cdnUrl":"` + img2 + `","title":"hands on hips"},{"type":"custom","text":"arms crossed"},{"type":"template","cdnUrl":"` + dataPNG + `"}]}`, "", "", ""},
	{"pc 8 poses", "pose-control", `{"modelImage":"` + img + `","poses":[` + strings.TrimSuffix(strings.Repeat(`{"type":"custom","text":"walk"},`, 8), ",") + `]}`, "", "", ""},
	{"pc 9 poses", "pose-control", `{"modelImage":"` + img + `","poses":[` + strings.TrimSuffix(strings.Repeat(`{"type":"custom","text":"walk"},`, 9), ",") + `]}`, CodeOutOfRange, "inputs.poses", "must hold 1 to 8 poses, got 9"},
	{"pc 0 poses", "pose-control", `{"modelImage":"` + img + `","poses":[]}`, CodeOutOfRange, "inputs.poses", "got 0"},
	{"pc poses missing", "pose-control", `{"modelImage":"` + img + `"}`, CodeMissingField, "inputs.poses", "inputs.poses is required"},
	{"pc poses object", "pose-control", `{"modelImage":"` + img + `","poses":{"type":"custom"}}`, CodeInvalidType, "inputs.poses", "must be an array of poses, got an object"},
	{"pc pose string", "pose-control", `{"modelImage":"` + img + `","poses":["arms up"]}`, CodeInvalidType, "inputs.poses[0]", "inputs.poses[0] must be a JSON object, got a string"},
	{"pc missing modelImage", "pose-control", `{"poses":[{"type":"custom","text":"x"}]}`, CodeMissingField, "inputs.modelImage", ""},
	{"pc type missing", "pose-control", `{"modelImage":"` + img + `","poses":[{"text":"x"}]}`, CodeMissingField, "inputs.poses[0].type", "template or custom"},
	{"pc type bad", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"preset","text":"x"}]}`, CodeInvalidValue, "inputs.poses[0].type", "must be one of template, custom"},
	{"pc template no url", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"custom","text":"a"},{"type":"template","title":"t"}]}`, CodeMissingField, "inputs.poses[1].cdnUrl", "inputs.poses[1].cdnUrl is required"},
	{"pc template bad url", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"template","cdnUrl":"not a url"}]}`, CodeInvalidURL, "inputs.poses[0].cdnUrl", ""},
	{"pc template text key", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"template","cdnUrl":"` + img2 + `","text":"x"}]}`, CodeUnknownField, "inputs.poses[0].text", "not a field of a template pose; accepted fields: cdnUrl, title, type"},
	{"pc custom no text", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"custom"}]}`, CodeMissingField, "inputs.poses[0].text", ""},
	{"pc custom empty text", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"custom","text":""}]}`, CodeEmptyValue, "inputs.poses[0].text", "must not be empty"},
	{"pc custom url key", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"custom","text":"x","cdnUrl":"` + img2 + `"}]}`, CodeUnknownField, "inputs.poses[0].cdnUrl", "accepted fields: text, type"},
	{"pc title number", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"template","cdnUrl":"` + img2 + `","title":5}]}`, CodeInvalidType, "inputs.poses[0].title", ""},
	{"pc quality bad", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"custom","text":"x"}],"quality":"hd"}`, CodeInvalidValue, "inputs.quality", ""},
	{"pc sampleCount unknown", "pose-control", `{"modelImage":"` + img + `","poses":[{"type":"custom","text":"x"}],"sampleCount":2}`, CodeUnknownField, "inputs.sampleCount", "accepted inputs: modelImage, poses, quality, ratio"},

	// ---- model-create ----
	{"mc generate ok", "model-create", `{"type":"generate","name":"Ava","prompt":"a woman in a linen suit, studio"}`, "", "", ""},
	{"mc generate full", "model-create", `{"type":"generate","name":"Ava","prompt":"p","gender":"female","bodyType":"athletic","clothing":"linen suit","pose":"walking","faceModelId":"11111111-1111-4111-8111-111111111111","poseImageBase64":"` + dataPNG + `","quality":"2k","aspectRatio":"2:3","sampleCount":4}`, "", "", ""},
	{"mc generate face no prompt", "model-create", `{"type":"generate","name":"Ava","faceModelId":"11111111-1111-4111-8111-111111111111"}`, "", "", ""},
	{"mc generate no prompt", "model-create", `{"type":"generate","name":"Ava"}`, CodeMissingField, "inputs.prompt", "required when inputs.type is generate (it may be omitted only when inputs.faceModelId is given)"},
	{"mc generate empty prompt", "model-create", `{"type":"generate","name":"Ava","prompt":""}`, CodeEmptyValue, "inputs.prompt", "may be omitted only when inputs.faceModelId"},
	{"mc no type", "model-create", `{"name":"Ava","prompt":"p"}`, CodeMissingField, "inputs.type", "generate or upload"},
	{"mc bad type", "model-create", `{"type":"train","name":"Ava","prompt":"p"}`, CodeInvalidValue, "inputs.type", "must be one of generate, upload"},
	{"mc no name", "model-create", `{"type":"generate","prompt":"p"}`, CodeMissingField, "inputs.name", ""},
	{"mc blank name", "model-create", `{"type":"generate","prompt":"p","name":" "}`, CodeEmptyValue, "inputs.name", ""},
	{"mc upload ok", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `"}`, "", "", ""},
	{"mc upload empty generate fields ok", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `","prompt":"","gender":null}`, "", "", ""},
	{"mc upload raw base64", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + rawB64 + `"}`, CodeMissingDataURIPrefix, "inputs.imageBase64", "raw base64 without the data URI prefix"},
	{"mc upload url", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + img + `"}`, CodeInvalidImage, "inputs.imageBase64", "must be a base64 data URI"},
	{"mc upload missing image", "model-create", `{"type":"upload","name":"Mine"}`, CodeMissingField, "inputs.imageBase64", ""},
	{"mc upload with prompt", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `","prompt":"p"}`, CodeFieldNotAllowed, "inputs.prompt", "only accepted when inputs.type is generate"},
	{"mc upload with face", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `","faceModelId":"11111111-1111-4111-8111-111111111111"}`, CodeFieldNotAllowed, "inputs.faceModelId", ""},
	{"mc upload with pose image", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `","poseImageBase64":"` + dataPNG + `"}`, CodeFieldNotAllowed, "inputs.poseImageBase64", ""},
	{"mc upload sampleCount 2", "model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `","sampleCount":2}`, CodeOutOfRange, "inputs.sampleCount", "must be 1 when inputs.type is upload"},
	{"mc generate with imageBase64", "model-create", `{"type":"generate","name":"A","prompt":"p","imageBase64":"` + dataPNG + `"}`, CodeFieldNotAllowed, "inputs.imageBase64", "only accepted when inputs.type is upload"},
	{"mc pose raw base64", "model-create", `{"type":"generate","name":"A","prompt":"p","poseImageBase64":"` + rawB64 + `"}`, CodeMissingDataURIPrefix, "inputs.poseImageBase64", ""},
	{"mc pose both", "model-create", `{"type":"generate","name":"A","prompt":"p","poseModelId":"22222222-2222-4222-8222-222222222222","poseImageBase64":"` + dataPNG + `"}`, CodeConflictingFields, "inputs.poseImageBase64", "not both"},
	{"mc face id bad chars", "model-create", `{"type":"generate","name":"A","prompt":"p","faceModelId":"../../etc"}`, CodeInvalidValue, "inputs.faceModelId", "saved model id"},
	{"mc sampleCount 5", "model-create", `{"type":"generate","name":"A","prompt":"p","sampleCount":5}`, CodeOutOfRange, "inputs.sampleCount", "from 1 to 4"},
	{"mc aspect bad", "model-create", `{"type":"generate","name":"A","prompt":"p","aspectRatio":"1:2"}`, CodeInvalidValue, "inputs.aspectRatio", ""},
	{"mc aspect empty", "model-create", `{"type":"generate","name":"A","prompt":"p","aspectRatio":""}`, CodeInvalidValue, "inputs.aspectRatio", ""},
	{"mc gender number", "model-create", `{"type":"generate","name":"A","prompt":"p","gender":1}`, CodeInvalidType, "inputs.gender", ""},
	{"mc ratio unknown", "model-create", `{"type":"generate","name":"A","prompt":"p","ratio":"1:1"}`, CodeUnknownField, "inputs.ratio", "aspectRatio, bodyType, clothing, faceModelId, gender, imageBase64, name, pose, poseImageBase64, poseModelId, prompt, quality, sampleCount, type"},

	// ---- product-to-model ----
	{"ptm ok", "product-to-model", `{"productImage":"` + img + `"}`, "", "", ""},
	{"ptm ok full", "product-to-model", `{"productImage":"` + dataPNG + `","customPrompt":"` + strings.Repeat("ü", 500) + `","modelImageUrl":"` + img2 + `","styleId":"ugc","quality":"2k","sampleCount":3,"ratio":"1:1"}`, "", "", ""},
	{"ptm missing", "product-to-model", `{"customPrompt":"x"}`, CodeMissingField, "inputs.productImage", ""},
	{"ptm prompt 501", "product-to-model", `{"productImage":"` + img + `","customPrompt":"` + strings.Repeat("ü", 501) + `"}`, CodeTooLong, "inputs.customPrompt", "501 characters long, the limit is 500"},
	{"ptm style bad", "product-to-model", `{"productImage":"` + img + `","styleId":"Studio"}`, CodeInvalidValue, "inputs.styleId", ""},
	{"ptm sampleCount 0", "product-to-model", `{"productImage":"` + img + `","sampleCount":0}`, CodeOutOfRange, "inputs.sampleCount", ""},
	{"ptm ratio bad", "product-to-model", `{"productImage":"` + img + `","ratio":"3:5"}`, CodeInvalidValue, "inputs.ratio", ""},
	{"ptm raw base64", "product-to-model", `{"productImage":"` + rawB64 + `"}`, CodeMissingDataURIPrefix, "inputs.productImage", ""},
	{"ptm prompt key", "product-to-model", `{"productImage":"` + img + `","prompt":"x"}`, CodeUnknownField, "inputs.prompt", "accepted inputs: customPrompt, modelImageUrl, productImage, quality, ratio, sampleCount, styleId"},

	// ---- angle-generation ----
	{"ag ok", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","left45","right45"]}`, "", "", ""},
	{"ag six", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","back","leftSide","rightSide","left45","right45"],"return_base64":true}`, "", "", ""},
	{"ag dup", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","back","front"]}`, CodeDuplicateValue, "inputs.angleIds[2]", `repeats "front" (already at inputs.angleIds[0])`},
	{"ag seven", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","back","leftSide","rightSide","left45","right45","front"]}`, CodeOutOfRange, "inputs.angleIds", "must hold 1 to 6 angles, got 7"},
	{"ag empty", "angle-generation", `{"imageUrl":"` + img + `","angleIds":[]}`, CodeOutOfRange, "inputs.angleIds", ""},
	{"ag missing", "angle-generation", `{"imageUrl":"` + img + `"}`, CodeMissingField, "inputs.angleIds", ""},
	{"ag bad id", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","top"]}`, CodeInvalidValue, "inputs.angleIds[1]", "front, back, leftSide, rightSide, left45, right45"},
	{"ag number id", "angle-generation", `{"imageUrl":"` + img + `","angleIds":[45]}`, CodeInvalidType, "inputs.angleIds[0]", "must be a string, got a number"},
	{"ag return_base64 string", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front"],"return_base64":"yes"}`, CodeInvalidType, "inputs.return_base64", "must be true or false"},
	{"ag missing image", "angle-generation", `{"angleIds":["front"]}`, CodeMissingField, "inputs.imageUrl", ""},

	// ---- tryon ----
	{"to ok", "tryon", `{"personImage":"` + img + `","garmentImage":"` + img2 + `"}`, "", "", ""},
	{"to ok full", "tryon", `{"personImage":"` + dataPNG + `","garmentImage":"` + dataPNG + `","accuracy":"hyper","sampleCount":4}`, "", "", ""},
	{"to missing garment", "tryon", `{"personImage":"` + img + `"}`, CodeMissingField, "inputs.garmentImage", ""},
	{"to accuracy bad", "tryon", `{"personImage":"` + img + `","garmentImage":"` + img2 + `","accuracy":"ultra"}`, CodeInvalidValue, "inputs.accuracy", "standard, high, hyper"},
	{"to quality unknown", "tryon", `{"personImage":"` + img + `","garmentImage":"` + img2 + `","quality":"2k"}`, CodeUnknownField, "inputs.quality", "accepted inputs: accuracy, garmentImage, personImage, sampleCount"},
	{"to sampleCount 5", "tryon", `{"personImage":"` + img + `","garmentImage":"` + img2 + `","sampleCount":5}`, CodeOutOfRange, "inputs.sampleCount", ""},
	{"to empty person", "tryon", `{"personImage":"","garmentImage":"` + img2 + `"}`, CodeEmptyValue, "inputs.personImage", ""},

	// ---- image-to-video ----
	{"iv ok", "image-to-video", `{"imageUrl":"` + img + `"}`, "", "", ""},
	{"iv ok full", "image-to-video", `{"imageUrl":"` + img + `","prompt":"slow push in","duration":8,"aspectRatio":"16:9","generateAudio":false}`, "", "", ""},
	{"iv duration 5", "image-to-video", `{"imageUrl":"` + img + `","duration":5}`, CodeInvalidValue, "inputs.duration", "must be 4, 6 or 8 (seconds), got 5"},
	{"iv duration 10", "image-to-video", `{"imageUrl":"` + img + `","duration":10}`, CodeInvalidValue, "inputs.duration", ""},
	{"iv duration string", "image-to-video", `{"imageUrl":"` + img + `","duration":"6"}`, CodeInvalidType, "inputs.duration", "must be an integer, got a string"},
	{"iv duration float", "image-to-video", `{"imageUrl":"` + img + `","duration":6.5}`, CodeInvalidType, "inputs.duration", ""},
	{"iv aspect 1:1", "image-to-video", `{"imageUrl":"` + img + `","aspectRatio":"1:1"}`, CodeInvalidValue, "inputs.aspectRatio", "must be one of 16:9, 9:16"},
	{"iv audio string", "image-to-video", `{"imageUrl":"` + img + `","generateAudio":"true"}`, CodeInvalidType, "inputs.generateAudio", ""},
	{"iv quality unknown", "image-to-video", `{"imageUrl":"` + img + `","quality":"1k"}`, CodeUnknownField, "inputs.quality", "accepted inputs: aspectRatio, duration, generateAudio, imageUrl, prompt"},
	{"iv missing", "image-to-video", `{"prompt":"x"}`, CodeMissingField, "inputs.imageUrl", ""},
}

func TestValidate(t *testing.T) {
	for _, tc := range validateCases {
		t.Run(tc.name, func(t *testing.T) {
			norm, cost, err := validateJSON(tc.model, json.RawMessage(tc.inputs))
			if tc.code == "" {
				if err != nil {
					t.Fatalf("want valid, got %s %s: %s", err.Code, err.Field, err.Msg)
				}
				if cost < 1 || !json.Valid(norm) {
					t.Fatalf("cost %d, normalised %s", cost, norm)
				}
				return
			}
			if err == nil {
				t.Fatalf("want %s, got valid (%s)", tc.code, norm)
			}
			if err.Code != tc.code || err.Field != tc.field || !strings.Contains(err.Msg, tc.msg) {
				t.Fatalf("got code=%s field=%s msg=%q\nwant code=%s field=%s msg~%q", err.Code, err.Field, err.Msg, tc.code, tc.field, tc.msg)
			}
			if tc.field != "" && !strings.HasPrefix(err.Msg, tc.field) && !strings.Contains(err.Msg, tc.field) {
				t.Errorf("message %q does not name the field %s", err.Msg, tc.field)
			}
		})
	}
}

func TestValidateDefaults(t *testing.T) {
	for _, tt := range []struct {
		model, in, want string
	}{
		{"prompt-tryon", `{"personImage":"` + img + `","prompt":"red dress"}`,
			`{"personImage":"` + img + `","prompt":"red dress","quality":"1k","sampleCount":1,"ratio":"","modelImageUrl":"","styleId":""}`},
		{"pose-control", `{"modelImage":"` + img + `","poses":[{"type":"template","cdnUrl":"` + img2 + `"},{"type":"custom","text":"arms crossed"}]}`,
			`{"modelImage":"` + img + `","poses":[{"type":"template","cdnUrl":"` + img2 + `","title":""},{"type":"custom","text":"arms crossed"}],"quality":"1k","ratio":""}`},
		{"model-create", `{"type":"generate","name":"Ava","prompt":"p"}`,
			`{"type":"generate","name":"Ava","prompt":"p","imageBase64":"","gender":"","bodyType":"","clothing":"","pose":"","faceModelId":"","poseModelId":"","poseImageBase64":"","quality":"1k","aspectRatio":"3:4","sampleCount":1}`},
		{"model-create", `{"type":"upload","name":"Mine","imageBase64":"` + dataPNG + `","prompt":""}`,
			`{"type":"upload","name":"Mine","prompt":"","imageBase64":"` + dataPNG + `","gender":"","bodyType":"","clothing":"","pose":"","faceModelId":"","poseModelId":"","poseImageBase64":"","quality":"1k","aspectRatio":"3:4","sampleCount":1}`},
		{"product-to-model", `{"productImage":"` + img + `"}`,
			`{"productImage":"` + img + `","customPrompt":"","modelImageUrl":"","styleId":"","quality":"1k","sampleCount":1,"ratio":"3:4"}`},
		{"product-to-model", `{"productImage":"` + img + `","ratio":""}`,
			`{"productImage":"` + img + `","customPrompt":"","modelImageUrl":"","styleId":"","quality":"1k","sampleCount":1,"ratio":"3:4"}`},
		{"angle-generation", `{"imageUrl":"` + img + `","angleIds":["front"]}`,
			`{"imageUrl":"` + img + `","angleIds":["front"],"quality":"1k","ratio":"","return_base64":false}`},
		{"tryon", `{"personImage":"` + img + `","garmentImage":"` + img2 + `"}`,
			`{"personImage":"` + img + `","garmentImage":"` + img2 + `","accuracy":"standard","sampleCount":1}`},
		{"image-to-video", `{"imageUrl":"` + img + `"}`,
			`{"imageUrl":"` + img + `","prompt":"","duration":6,"aspectRatio":"9:16","generateAudio":true}`},
	} {
		norm, _, err := validateJSON(tt.model, json.RawMessage(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.model, err)
		}
		// Field order follows the struct; compare as canonical JSON.
		if got, want := canon(t, norm), canon(t, json.RawMessage(tt.want)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tt.model, got, want)
		}
	}
	// The exact bytes for one model: spec field order, no HTML escaping.
	norm, _, _ := validateJSON("tryon", json.RawMessage(`{"garmentImage":"`+img2+`","personImage":"`+img+`"}`))
	if want := `{"personImage":"` + img + `","garmentImage":"` + img2 + `","accuracy":"standard","sampleCount":1}`; string(norm) != want {
		t.Errorf("bytes:\n got %s\nwant %s", norm, want)
	}
}

func canon(t *testing.T, b json.RawMessage) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestCost(t *testing.T) {
	poses := func(n int) string {
		return strings.TrimSuffix(strings.Repeat(`{"type":"custom","text":"x"},`, n), ",")
	}
	for _, tt := range []struct {
		name, model, in string
		want            int
	}{
		// Spec examples.
		{"3 poses 1k", "pose-control", `{"modelImage":"` + img + `","poses":[` + poses(3) + `]}`, 3},
		{"3 poses 4k", "pose-control", `{"modelImage":"` + img + `","poses":[` + poses(3) + `],"quality":"4k"}`, 15},
		{"3 angles 1k", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","back","left45"]}`, 3},
		{"3 angles 4k", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","back","left45"],"quality":"4k"}`, 15},
		{"video 4s", "image-to-video", `{"imageUrl":"` + img + `","duration":4}`, 6},
		{"video default 6s", "image-to-video", `{"imageUrl":"` + img + `"}`, 9},
		{"video 8s", "image-to-video", `{"imageUrl":"` + img + `","duration":8}`, 12},
		// Formulas.
		{"pt 1k x1", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x"}`, 1},
		{"pt 2k x4", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","quality":"2k","sampleCount":4}`, 12},
		{"pt 4k x3", "prompt-tryon", `{"personImage":"` + img + `","prompt":"x","quality":"4k","sampleCount":3}`, 15},
		{"ptm 4k x2", "product-to-model", `{"productImage":"` + img + `","quality":"4k","sampleCount":2}`, 10},
		{"ptm 2k", "product-to-model", `{"productImage":"` + img + `","quality":"2k"}`, 3},
		{"mc 2k", "model-create", `{"type":"generate","name":"A","prompt":"p","quality":"2k"}`, 3},
		{"mc 4k x3", "model-create", `{"type":"generate","name":"A","prompt":"p","quality":"4k","sampleCount":3}`, 15},
		{"mc upload 1k", "model-create", `{"type":"upload","name":"A","imageBase64":"` + dataPNG + `"}`, 1},
		{"tryon x1", "tryon", `{"personImage":"` + img + `","garmentImage":"` + img + `"}`, 1},
		{"tryon x3 hyper", "tryon", `{"personImage":"` + img + `","garmentImage":"` + img + `","sampleCount":3,"accuracy":"hyper"}`, 3},
		{"8 poses 2k", "pose-control", `{"modelImage":"` + img + `","poses":[` + poses(8) + `],"quality":"2k"}`, 24},
		{"6 angles 2k", "angle-generation", `{"imageUrl":"` + img + `","angleIds":["front","back","leftSide","rightSide","left45","right45"],"quality":"2k"}`, 18},
	} {
		norm, cost, err := validateJSON(tt.model, json.RawMessage(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if cost != tt.want {
			t.Errorf("%s: Validate cost %d, want %d", tt.name, cost, tt.want)
		}
		// Cost agrees on raw (defaults implied) and normalised inputs.
		for _, in := range []json.RawMessage{norm, json.RawMessage(tt.in)} {
			if c, err := costJSON(tt.model, in); err != nil || c != tt.want {
				t.Errorf("%s: Cost = %d, %v; want %d", tt.name, c, err, tt.want)
			}
		}
	}
	for _, bad := range []struct{ model, in string }{
		{"tryon", `{"sampleCount":9}`},
		{"image-to-video", `{"duration":5}`},
		{"pose-control", `{"poses":[]}`},
		{"prompt-tryon", `{"quality":"3k"}`},
		{"nope", `{}`},
		{"tryon", `[`},
	} {
		if c, err := costJSON(bad.model, json.RawMessage(bad.in)); err == nil {
			t.Errorf("Cost(%s, %s) = %d, want error", bad.model, bad.in, c)
		}
	}
}

func TestImageSizeLimit(t *testing.T) {
	// Exactly the limit passes, one byte more is refused (a 1 MB policy
	// keeps the test fast); over 25 MB is refused by default before any
	// decoding, with the size in the message.
	p := fetch.Policy{MaxBytes: 1 << 20}
	at := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(make([]byte, 1<<20))
	if _, _, err := ValidateWith(p, "tryon", json.RawMessage(`{"personImage":"`+at+`","garmentImage":"`+img+`"}`)); err != nil {
		t.Fatalf("1 MB: %v", err)
	}
	at1 := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(make([]byte, 1<<20+1))
	if _, _, err := ValidateWith(p, "tryon", json.RawMessage(`{"personImage":"`+at1+`","garmentImage":"`+img+`"}`)); err == nil || err.Code != CodeImageTooLarge {
		t.Fatalf("1 MB + 1: %v", err)
	}
	over := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(make([]byte, 32715571))
	_, _, err := Validate("tryon", json.RawMessage(`{"personImage":"`+img+`","garmentImage":"`+over+`"}`))
	if err == nil || err.Code != CodeImageTooLarge || err.Field != "inputs.garmentImage" ||
		err.Msg != "inputs.garmentImage: image is 31.2 MB, the limit is 25 MB" {
		t.Fatalf("over: %+v", err)
	}
}

func TestValidateRealImages(t *testing.T) {
	// Real data URIs from the test data pass for every image field kind.
	face := testdataURI(t, "images/gocv_face.jpg", "image/jpeg")
	webp := testdataURI(t, "images/fashn_model.webp", "image/webp")
	in := `{"type":"upload","name":"Face","imageBase64":"` + face + `"}`
	if _, _, err := Validate("model-create", json.RawMessage(in)); err != nil {
		t.Fatal(err)
	}
	in = `{"personImage":"` + webp + `","garmentImage":"` + face + `"}`
	norm, _, err := validateJSON("tryon", json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var got spec.TryOnInputs
	if err := json.Unmarshal(norm, &got); err != nil || got.PersonImage != webp {
		t.Fatalf("data URI not carried verbatim: %v", err)
	}
}

// validateJSON is Validate with the normalised inputs as their canonical
// JSON (spec.Encode).
func validateJSON(model string, raw json.RawMessage) (json.RawMessage, int, *ValidationError) {
	in, cost, e := Validate(model, raw)
	if e != nil {
		return nil, 0, e
	}
	b, err := spec.Encode(in)
	if err != nil {
		return nil, 0, verr("inputs", CodeInvalidValue, "%v", err)
	}
	return b, cost, nil
}

// costJSON is spec.Cost of inputs given as JSON (defaults implied).
func costJSON(model string, raw json.RawMessage) (int, error) {
	in, err := spec.DecodeInputs(model, raw)
	if err != nil {
		return 0, err
	}
	return spec.Cost(in)
}
