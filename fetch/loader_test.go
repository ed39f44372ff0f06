package fetch

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"fashiond/pipelines"
)

// testdata returns a file of ../shared/testdata (or FASHIOND_TESTDATA).
func testdata(t testing.TB, rel string) []byte {
	t.Helper()
	dir := os.Getenv("FASHIOND_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "testdata")
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("test data: %v", err)
	}
	return b
}

func localPolicy() Policy {
	p := DefaultPolicy()
	p.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	return p
}

func asJobError(t *testing.T, err error) *pipelines.Error {
	t.Helper()
	var pe *pipelines.Error
	if !errors.As(err, &pe) {
		t.Fatalf("want *pipelines.Error, got %T %v", err, err)
	}
	return pe
}

// imageServer serves /img.png (astronaut), /r/{n} (redirect chain ending at
// /img.png), /to?u= (redirect to u), /status/{code}, /big (unbounded body,
// no Content-Length), /bigcl (Content-Length above the limit), /slow.
func imageServer(t *testing.T) *httptest.Server {
	t.Helper()
	pngBytes := testdata(t, "images/astronaut.png")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /img.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain") // lies: detection is from content
		w.Write(pngBytes)
	})
	mux.HandleFunc("GET /r/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n <= 0 {
			http.Redirect(w, r, "/img.png", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("GET /to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("GET /status/{code}", func(w http.ResponseWriter, r *http.Request) {
		c, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(c)
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(pngBytes[:8])
		chunk := make([]byte, 64<<10)
		for i := 0; i < 64; i++ { // 4 MiB in total, streamed (chunked)
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /bigcl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(32715571))
		w.Write(pngBytes)
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("GET /html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png") // lies the other way
		w.Write([]byte("<!DOCTYPE html><html><body>not an image</body></html>"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestLoadLoopbackRefusedByDefault(t *testing.T) {
	srv := imageServer(t)
	_, err := NewLoader(DefaultPolicy()).Load(context.Background(), "inputs.personImage", srv.URL+"/img.png")
	pe := asJobError(t, err)
	if pe.Transient {
		t.Error("a refused address must not be transient")
	}
	var re *RefusedError
	if !errors.As(err, &re) || !strings.HasPrefix(re.Rule, "loopback") {
		t.Fatalf("want loopback refusal, got %v", err)
	}
	if !strings.HasPrefix(err.Error(), "inputs.personImage: ") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("message %q must start with the field and name the address", err)
	}

	// A host name that resolves to loopback is refused on the resolved IP.
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	_, err = NewLoader(DefaultPolicy()).Load(context.Background(), "inputs.x", fmt.Sprintf("http://localhost:%d/img.png", port))
	if !errors.As(err, &re) {
		t.Fatalf("localhost: want refusal, got %v", err)
	}
}

func TestLoadAllowed(t *testing.T) {
	srv := imageServer(t)
	img, err := NewLoader(localPolicy()).Load(context.Background(), "inputs.personImage", srv.URL+"/img.png")
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 512 || b.Dy() != 512 {
		t.Fatalf("bounds %v, want 512x512", b)
	}
}

func TestRedirects(t *testing.T) {
	srv := imageServer(t)
	l := NewLoader(localPolicy())
	ctx := context.Background()
	// /r/2 -> /r/1 -> /r/0 -> /img.png: three redirects, allowed.
	if _, err := l.Load(ctx, "inputs.imageUrl", srv.URL+"/r/2"); err != nil {
		t.Fatalf("3 redirects: %v", err)
	}
	// Four redirects: refused.
	_, err := l.Load(ctx, "inputs.imageUrl", srv.URL+"/r/3")
	if pe := asJobError(t, err); pe.Transient || !strings.Contains(err.Error(), "stopped after 3 redirects") {
		t.Fatalf("4 redirects: %v (transient=%v)", err, pe.Transient)
	}

	var re *RefusedError
	// Redirect to the metadata address: refused by rule.
	_, err = l.Load(ctx, "inputs.imageUrl", srv.URL+"/to?u=http://169.254.169.254/latest/meta-data/")
	if !errors.As(err, &re) || !strings.HasPrefix(re.Rule, "link-local") {
		t.Fatalf("redirect to metadata: %v", err)
	}
	// Only 127.0.0.1 allowed; a redirect to a host name resolving to ::1 or
	// 127.0.0.1 via another name is checked at connect time.
	p := DefaultPolicy()
	p.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	_, err = NewLoader(p).Load(ctx, "inputs.imageUrl", srv.URL+fmt.Sprintf("/to?u=http://127.0.0.2:%d/img.png", port))
	if !errors.As(err, &re) || re.Addr.String() != "127.0.0.2" {
		t.Fatalf("redirect to 127.0.0.2: %v", err)
	}
	// Non-http schemes.
	_, err = l.Load(ctx, "inputs.imageUrl", srv.URL+"/to?u=file:///etc/passwd")
	if err == nil || !strings.Contains(err.Error(), `scheme "file" is not allowed`) {
		t.Fatalf("redirect to file: %v", err)
	}
}

func TestSizeLimits(t *testing.T) {
	srv := imageServer(t)
	p := localPolicy()
	p.MaxBytes = 1 << 20
	l := NewLoader(p)
	ctx := context.Background()

	_, err := l.Load(ctx, "inputs.productImage", srv.URL+"/big")
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != -1 {
		t.Fatalf("streamed body: %v", err)
	}
	if want := "inputs.productImage: image is larger than 1 MB, the limit is 1 MB"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}

	_, err = NewLoader(localPolicy()).Load(ctx, "inputs.personImage", srv.URL+"/bigcl")
	if want := "inputs.personImage: image is 31.2 MB, the limit is 25 MB"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}

	// Data URI over the limit: refused from its length.
	big := "data:image/png;base64," + base64.StdEncoding.EncodeToString(make([]byte, (1<<20)+3))
	_, err = l.Load(ctx, "inputs.personImage", big)
	if want := "inputs.personImage: image is 1 MB, the limit is 1 MB"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if !errors.As(err, &tl) || tl.Size != (1<<20)+3 {
		t.Errorf("size %+v", tl)
	}
}

func TestTransient(t *testing.T) {
	srv := imageServer(t)
	ctx := context.Background()
	for _, tt := range []struct {
		path      string
		transient bool
		msg       string
	}{
		{"/status/503", true, "returned HTTP 503 Service Unavailable"},
		{"/status/500", true, "returned HTTP 500"},
		{"/status/429", true, "returned HTTP 429"},
		{"/status/404", false, "returned HTTP 404 Not Found"},
		{"/status/403", false, "returned HTTP 403"},
		{"/html", false, "content is not a JPEG, PNG or WEBP image (detected text/html"},
	} {
		_, err := NewLoader(localPolicy()).Load(ctx, "inputs.garmentImage", srv.URL+tt.path)
		pe := asJobError(t, err)
		if pe.Transient != tt.transient || !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), "inputs.garmentImage: ") {
			t.Errorf("%s: %v transient=%v", tt.path, err, pe.Transient)
		}
	}

	p := localPolicy()
	p.TotalTimeout = 300 * time.Millisecond
	_, err := NewLoader(p).Load(ctx, "inputs.garmentImage", srv.URL+"/slow")
	if pe := asJobError(t, err); !pe.Transient || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("slow: %v transient=%v", err, pe.Transient)
	}

	// Nothing listens: connection refused is transient.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err = NewLoader(localPolicy()).Load(ctx, "inputs.garmentImage", "http://"+addr+"/x.png")
	if pe := asJobError(t, err); !pe.Transient {
		t.Errorf("connection refused: %v transient=%v", err, pe.Transient)
	}
}

// pngHeader is a PNG whose IHDR claims w x h, followed by a tiny IDAT and
// IEND. Decoding it fully would need w*h*3 bytes.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func TestDecompressionBomb(t *testing.T) {
	l := NewLoader(DefaultPolicy())
	for _, tt := range []struct {
		w, h uint32
		msg  string
	}{
		{100000, 100000, "inputs.modelImage: image is 100000x100000, the longest side allowed is 12000 pixels"},
		{12000, 5000, "inputs.modelImage: image is 12000x5000 (60.0 megapixels), the limit is 50.0 megapixels"},
		{12001, 10, "inputs.modelImage: image is 12001x10, the longest side allowed is 12000 pixels"},
	} {
		uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngHeader(tt.w, tt.h))
		_, err := l.Load(context.Background(), "inputs.modelImage", uri)
		if err == nil || err.Error() != tt.msg {
			t.Errorf("%dx%d: got %v, want %q", tt.w, tt.h, err, tt.msg)
		}
	}
	// Within limits the same construction reaches the decoder (and fails
	// there, proving the check above ran first and not the decoder).
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngHeader(100, 100))
	_, err := l.Load(context.Background(), "inputs.modelImage", uri)
	if err == nil || !strings.Contains(err.Error(), "the PNG data cannot be decoded") {
		t.Errorf("100x100 truncated: %v", err)
	}
}

func TestFormatDetection(t *testing.T) {
	l := NewLoader(DefaultPolicy())
	for _, tt := range []struct {
		file, format, declared string
		w, h                   int
	}{
		{"images/gocv_face.jpg", "jpeg", "image/jpeg", 640, 480},
		{"images/astronaut.png", "png", "image/png", 512, 512},
		{"images/camera.png", "png", "image/png", 512, 512},
		{"images/fashn_garment.webp", "webp", "image/webp", 576, 864},
		{"images/fashn_model.webp", "webp", "image/webp", 832, 1248},
		// Declared type disagrees with content: content wins.
		{"images/fashn_garment.webp", "webp", "image/jpeg", 576, 864},
		{"images/gocv_face.jpg", "jpeg", "image/png", 640, 480},
	} {
		data := testdata(t, tt.file)
		if got := Sniff(data); got != tt.format {
			t.Errorf("%s: Sniff = %q, want %q", tt.file, got, tt.format)
		}
		uri := "data:" + tt.declared + ";base64," + base64.StdEncoding.EncodeToString(data)
		img, err := l.Load(context.Background(), "inputs.imageUrl", uri)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if b := img.Bounds(); b.Dx() != tt.w || b.Dy() != tt.h {
			t.Errorf("%s: %dx%d, want %dx%d", tt.file, b.Dx(), b.Dy(), tt.w, tt.h)
		}
	}
	// A known pixel: astronaut.png top-left pixel decodes to the same
	// colour as the standard library's direct decode.
	data := testdata(t, "images/astronaut.png")
	want, _ := png.Decode(bytes.NewReader(data))
	got, _, err := l.Decode("inputs.x", data)
	if err != nil {
		t.Fatal(err)
	}
	if color.RGBAModel.Convert(got.At(100, 200)) != color.RGBAModel.Convert(want.At(100, 200)) {
		t.Error("decoded pixel differs")
	}
	for _, bad := range [][]byte{nil, []byte("GIF89a......"), []byte("RIFF\x00\x00\x00\x00WAVEfmt ")} {
		if _, _, err := l.Decode("inputs.x", bad); err == nil || !strings.HasPrefix(err.Error(), "inputs.x: content is not a JPEG, PNG or WEBP image") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestDataURIErrors(t *testing.T) {
	l := NewLoader(DefaultPolicy())
	small := base64.StdEncoding.EncodeToString(testdata(t, "images/gocv_face.jpg"))
	for _, tt := range []struct {
		ref, msg string
	}{
		{small, "inputs.imageBase64: must be an http(s) URL or a data:image/...;base64, URI"},
		{"data:text/plain;base64," + small, "inputs.imageBase64: the data URI media type is text/plain"},
		{"data:image/jpeg," + small, "inputs.imageBase64: the data URI is not base64-encoded"},
		{"data:image/jpeg;base64" + small, "inputs.imageBase64: the data URI has no comma"},
		{"data:image/jpeg;base64,", "inputs.imageBase64: the data URI holds no data"},
		{"data:image/jpeg;base64,@@@@", "inputs.imageBase64: the data URI's base64 data is invalid"},
		{"data:;base64,AAAA", "inputs.imageBase64: the data URI media type is (none)"},
	} {
		_, err := l.Load(context.Background(), "inputs.imageBase64", tt.ref)
		if err == nil || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%.40q: got %v, want prefix %q", tt.ref, err, tt.msg)
		}
	}
	// Upper-case scheme, extra parameters and unpadded base64 are accepted.
	for _, prefix := range []string{"DATA:IMAGE/JPEG;BASE64,", "data:image/jpeg;name=face.jpg;base64,"} {
		if _, err := l.Load(context.Background(), "inputs.x", prefix+small); err != nil {
			t.Errorf("%s: %v", prefix, err)
		}
	}
	raw := base64.RawStdEncoding.EncodeToString(testdata(t, "images/gocv_face.jpg"))
	if _, err := l.Load(context.Background(), "inputs.x", "data:image/jpeg;base64,"+raw); err != nil {
		t.Errorf("unpadded: %v", err)
	}
}

func TestCheckDataURI(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 100, 1000} {
		data := bytes.Repeat([]byte{0xAB}, n)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			uri := "data:image/png;base64," + enc.EncodeToString(data)
			mt, size, err := CheckDataURI(uri, 0)
			if err != nil || mt != "image/png" || size != int64(n) {
				t.Errorf("n=%d: %q %d %v", n, mt, size, err)
			}
			if _, _, err := CheckDataURI(uri, int64(n-1)); n > 1 && err == nil {
				t.Errorf("n=%d: limit n-1 not enforced", n)
			}
		}
	}
}

func TestNewClientRedirectLimitDefault(t *testing.T) {
	// A zero policy gets the defaults (3 redirects).
	srv := imageServer(t)
	c := NewClient(Policy{Allow: localPolicy().Allow})
	resp, err := c.Get(srv.URL + "/r/2")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := c.Get(srv.URL + "/r/3"); err == nil {
		t.Fatal("4 redirects followed")
	}
}

func FuzzParseDataURI(f *testing.F) {
	for _, s := range []string{
		"data:image/png;base64,iVBORw0KGgo=",
		"data:image/jpeg;base64,/9j/",
		"DATA:image/webp;x=y;base64,UklGRg",
		"data:text/plain,hello",
		"data:,",
		"data:image/;base64,AA==",
		"data:image/png;base64,====",
		"http://example.com/a.png",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mt, data, err := ParseDataURI(s)
		mt2, size, err2 := CheckDataURI(s, 0)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("ParseDataURI err=%v, CheckDataURI err=%v", err, err2)
		}
		if err != nil {
			return
		}
		if !strings.HasPrefix(mt, "image/") || mt != mt2 {
			t.Fatalf("media type %q / %q", mt, mt2)
		}
		if int64(len(data)) != size {
			t.Fatalf("decoded %d bytes, CheckDataURI says %d", len(data), size)
		}
	})
}

func FuzzLoadDataURI(f *testing.F) {
	seed := func(w, h int) []byte {
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			img.Pix[i] = byte(i * 7)
		}
		var b bytes.Buffer
		png.Encode(&b, img)
		return b.Bytes()
	}
	f.Add(seed(4, 3))
	f.Add(pngHeader(100000, 100000))
	f.Add(pngHeader(10, 10))
	f.Add(testdata(f, "images/gocv_face.jpg")[:2000])
	f.Add(testdata(f, "images/fashn_garment.webp")[:2000])
	f.Add([]byte("RIFF\x10\x00\x00\x00WEBPVP8 "))
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xE0})
	p := DefaultPolicy()
	p.MaxSide = 2048
	p.MaxPixels = 1 << 20
	p.MaxBytes = 1 << 20
	l := NewLoader(p)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ref := range []string{
			"data:image/png;base64," + base64.StdEncoding.EncodeToString(data),
			"data:" + string(data),
		} {
			img, err := l.Load(context.Background(), "inputs.f", ref)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "inputs.f: ") {
					t.Fatalf("error without field: %v", err)
				}
				if pipelines.IsTransient(err) {
					t.Fatalf("data URI error marked transient: %v", err)
				}
				continue
			}
			if b := img.Bounds(); b.Dx() <= 0 || b.Dy() <= 0 || b.Dx() > 2048 || b.Dy() > 2048 {
				t.Fatalf("bounds %v", b)
			}
		}
	})
}
