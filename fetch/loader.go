package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/image/webp"

	"fashiond/pipelines"
)

// Loader implements pipelines.ImageLoader for http(s) URLs and data URIs
// under a Policy.
type Loader struct {
	p      Policy
	client *http.Client
}

var _ pipelines.ImageLoader = (*Loader)(nil)

// NewLoader returns a Loader with its own SSRF-safe client.
func NewLoader(p Policy) *Loader {
	p = p.withDefaults()
	return &Loader{p: p, client: NewClient(p)}
}

// Policy returns the loader's policy with defaults filled in.
func (l *Loader) Policy() Policy { return l.p }

// Load fetches or decodes ref (an http(s) URL or a data:image/...;base64,
// URI), detects JPEG, PNG or WEBP from the bytes, checks the dimensions from
// the header against MaxSide and MaxPixels, then decodes. Errors are
// *pipelines.Error whose message starts with field; network failures that
// may pass (timeouts, 5xx, 429) are Transient.
func (l *Loader) Load(ctx context.Context, field, ref string) (image.Image, error) {
	data, err := l.Fetch(ctx, field, ref)
	if err != nil {
		return nil, err
	}
	img, _, err := l.Decode(field, data)
	return img, err
}

// Fetch returns the encoded bytes of ref under the byte limit, without
// decoding them.
func (l *Loader) Fetch(ctx context.Context, field, ref string) ([]byte, error) {
	if IsDataURI(ref) {
		_, payload, err := splitDataURI(ref)
		if err != nil {
			return nil, fail(field, false, err, "%v", err)
		}
		if n := decodedLen(payload); n > l.p.MaxBytes {
			e := &TooLargeError{Size: n, Limit: l.p.MaxBytes}
			return nil, fail(field, false, e, "%v", e)
		}
		_, data, err := ParseDataURI(ref)
		if err != nil {
			return nil, fail(field, false, err, "%v", err)
		}
		return data, nil
	}
	if err := CheckURLSyntax(ref); err != nil {
		return nil, fail(field, false, err, "must be an http(s) URL or a data:image/...;base64, URI: %v", err)
	}
	return l.get(ctx, field, ref)
}

func (l *Loader) get(ctx context.Context, field, ref string) ([]byte, error) {
	u, _ := url.Parse(ref)
	shown := redactURL(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, fail(field, false, err, "cannot build a request for %s: %v", shown, err)
	}
	req.Header.Set("Accept", "image/jpeg, image/png, image/webp, */*;q=0.1")
	req.Header.Set("User-Agent", "fashiond-fetch/1")
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, l.classify(ctx, field, shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		transient := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fail(field, transient, nil, "fetching %s returned HTTP %s", shown, resp.Status)
	}
	if resp.ContentLength > l.p.MaxBytes {
		e := &TooLargeError{Size: resp.ContentLength, Limit: l.p.MaxBytes}
		return nil, fail(field, false, e, "%v", e)
	}
	data, err := readLimited(resp.Body, l.p.MaxBytes)
	if err != nil {
		var tl *TooLargeError
		if errors.As(err, &tl) {
			return nil, fail(field, false, err, "%v", err)
		}
		return nil, l.classify(ctx, field, shown, err)
	}
	return data, nil
}

// readLimited reads r to the end, failing with *TooLargeError (Size -1) as
// soon as more than max bytes arrive.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, &TooLargeError{Size: -1, Limit: max}
	}
	return buf.Bytes(), nil
}

func (l *Loader) classify(ctx context.Context, field, shown string, err error) error {
	var refused *RefusedError
	var redirect *RedirectError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &refused):
		return fail(field, false, err, "cannot fetch %s: %v", shown, refused)
	case errors.As(err, &redirect):
		return fail(field, false, err, "cannot fetch %s: %v", shown, redirect)
	case ctx.Err() != nil:
		return fail(field, true, ctx.Err(), "fetching %s was cancelled: %v", shown, ctx.Err())
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fail(field, false, err, "cannot fetch %s: host %s not found", shown, dnsErr.Name)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fail(field, true, err, "fetching %s timed out (connect limit %s, total limit %s)", shown, l.p.ConnectTimeout, l.p.TotalTimeout)
	}
	return fail(field, true, err, "cannot fetch %s: %v", shown, trimURLErr(err))
}

// Format names.
const (
	FormatJPEG = "jpeg"
	FormatPNG  = "png"
	FormatWEBP = "webp"
)

// Sniff returns "jpeg", "png" or "webp" from the magic bytes, or "".
func Sniff(data []byte) string {
	switch {
	case len(data) >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF:
		return FormatJPEG
	case len(data) >= 8 && string(data[:8]) == "\x89PNG\r\n\x1a\n":
		return FormatPNG
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return FormatWEBP
	}
	return ""
}

// Decode detects the format from data, checks the header's dimensions and
// decodes. It returns the image and its format name.
func (l *Loader) Decode(field string, data []byte) (image.Image, string, error) {
	format := Sniff(data)
	var decodeConfig func(io.Reader) (image.Config, error)
	var decode func(io.Reader) (image.Image, error)
	switch format {
	case FormatJPEG:
		decodeConfig, decode = jpeg.DecodeConfig, jpeg.Decode
	case FormatPNG:
		decodeConfig, decode = png.DecodeConfig, png.Decode
	case FormatWEBP:
		decodeConfig, decode = webp.DecodeConfig, webp.Decode
	default:
		what := http.DetectContentType(data)
		if len(data) == 0 {
			what = "empty"
		}
		return nil, "", fail(field, false, nil, "content is not a JPEG, PNG or WEBP image (detected %s)", what)
	}
	cfg, err := decodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", fail(field, false, err, "the %s header is invalid: %v", strings.ToUpper(format), err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, "", fail(field, false, nil, "the %s image has no pixels (%dx%d)", strings.ToUpper(format), cfg.Width, cfg.Height)
	}
	if cfg.Width > l.p.MaxSide || cfg.Height > l.p.MaxSide {
		return nil, "", fail(field, false, nil, "image is %dx%d, the longest side allowed is %d pixels", cfg.Width, cfg.Height, l.p.MaxSide)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > int64(l.p.MaxPixels) {
		return nil, "", fail(field, false, nil, "image is %dx%d (%.1f megapixels), the limit is %.1f megapixels", cfg.Width, cfg.Height, float64(px)/1e6, float64(l.p.MaxPixels)/1e6)
	}
	img, err := decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fail(field, false, err, "the %s data cannot be decoded: %v", strings.ToUpper(format), err)
	}
	return img, format, nil
}

func fail(field string, transient bool, cause error, format string, args ...any) error {
	return &pipelines.Error{Msg: field + ": " + fmt.Sprintf(format, args...), Transient: transient, Err: cause}
}
