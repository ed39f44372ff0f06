package fetch

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestEncodeDataURIRoundTrip(t *testing.T) {
	for _, tc := range []struct{ file, mt string }{
		{"images/gocv_face.jpg", "image/jpeg"}, {"images/astronaut.png", "image/png"}, {"images/fashn_model.webp", "image/webp"},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "shared", "testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		uri, err := EncodeDataURI(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		mt, back, err := ParseDataURI(uri)
		if err != nil || mt != tc.mt || !bytes.Equal(back, data) {
			t.Fatalf("%s: round trip gave %q, %d bytes, %v", tc.file, mt, len(back), err)
		}
	}
	if _, err := EncodeDataURI([]byte("GIF89a....")); err == nil {
		t.Fatal("a GIF was encoded as a supported image")
	}
}
