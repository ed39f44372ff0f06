package jobs

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"strconv"
	"testing"
	"time"

	"fashiond/pipelines"
)

func TestEncodeOutput(t *testing.T) {
	opaque := image.NewRGBA(image.Rect(0, 0, 10, 6))
	for i := range opaque.Pix {
		opaque.Pix[i] = 255
	}
	clear := image.NewNRGBA(image.Rect(0, 0, 10, 6)) // fully transparent
	mp4 := append([]byte{0, 0, 0, 0x18}, []byte("ftypisom0000")...)
	tests := []struct {
		name string
		o    pipelines.Output
		ext  string
		ct   string
		ok   bool
	}{
		{"opaque auto", pipelines.Output{Image: opaque}, "jpg", "image/jpeg", true},
		{"alpha auto", pipelines.Output{Image: clear}, "png", "image/png", true},
		{"forced png", pipelines.Output{Image: opaque, Format: "png"}, "png", "image/png", true},
		{"forced jpeg on alpha", pipelines.Output{Image: clear, Format: "jpeg"}, "jpg", "image/jpeg", true},
		{"mp4", pipelines.Output{Video: mp4}, "mp4", "video/mp4", true},
		{"not mp4", pipelines.Output{Video: []byte("RIFF....AVI LIST")}, "", "", false},
		{"both", pipelines.Output{Image: opaque, Video: mp4}, "", "", false},
		{"none", pipelines.Output{}, "", "", false},
		{"bad format", pipelines.Output{Image: opaque, Format: "gif"}, "", "", false},
		{"empty image", pipelines.Output{Image: image.NewRGBA(image.Rect(0, 0, 0, 0))}, "", "", false},
	}
	for _, tc := range tests {
		data, ext, ct, err := EncodeOutput(tc.o)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		if ext != tc.ext || ct != tc.ct {
			t.Errorf("%s: %s %s, want %s %s", tc.name, ext, ct, tc.ext, tc.ct)
		}
		switch ct {
		case "image/jpeg":
			img, err := jpeg.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			// A transparent image forced to JPEG is flattened onto white.
			if r, g, b, _ := img.At(5, 3).RGBA(); r>>8 < 250 || g>>8 < 250 || b>>8 < 250 {
				t.Errorf("%s: pixel %d,%d,%d, want white", tc.name, r>>8, g>>8, b>>8)
			}
		case "image/png":
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if _, _, _, a := img.At(5, 3).RGBA(); (tc.o.Image == clear) != (a == 0) {
				t.Errorf("%s: alpha %d", tc.name, a)
			}
		}
	}
	if hasAlpha(image.NewUniform(color.NRGBA{1, 2, 3, 255})) {
		t.Error("opaque uniform reported as transparent")
	}
}

// FuzzVerify: Verify never panics, and what Sign makes always verifies
// while any change to the body does not.
func FuzzVerify(f *testing.F) {
	secret := "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	f.Add("msg_1", []byte(`{"id":"1"}`), "v1,abc", "123")
	f.Add("", []byte{}, "v1,", "-1")
	f.Add("msg_x", []byte("body"), "v1,a v1,b v2,c", "99999999999999999999")
	f.Fuzz(func(t *testing.T, id string, body []byte, sigs, ts string) {
		h := http.Header{}
		h.Set(HeaderWebhookID, id)
		h.Set(HeaderWebhookTimestamp, ts)
		h.Set(HeaderWebhookSignature, sigs)
		_ = Verify(secret, h, body, time.Minute)
		if id == "" {
			return
		}
		now := time.Now()
		sig, err := Sign(secret, id, now, body)
		if err != nil {
			t.Fatal(err)
		}
		h.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(HeaderWebhookSignature, sig)
		if err := Verify(secret, h, body, time.Minute); err != nil {
			t.Fatalf("own signature rejected: %v", err)
		}
		if err := Verify(secret, h, append(body, 'x'), time.Minute); err == nil {
			t.Fatal("changed body accepted")
		}
	})
}
