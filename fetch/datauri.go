package fetch

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNotDataURI is returned when a string does not start with "data:".
var ErrNotDataURI = errors.New("not a data URI")

// IsDataURI reports whether s starts with the data: scheme (any case).
func IsDataURI(s string) bool {
	return len(s) >= 5 && strings.EqualFold(s[:5], "data:")
}

// splitDataURI checks the data:image/<type>[;param=value]*;base64, prefix
// and returns the lower-cased media type and the base64 payload.
func splitDataURI(s string) (mediaType, payload string, err error) {
	if !IsDataURI(s) {
		return "", "", ErrNotDataURI
	}
	header, payload, ok := strings.Cut(s[5:], ",")
	if !ok {
		return "", "", errors.New("the data URI has no comma: it must look like data:image/png;base64,<data>")
	}
	params := strings.Split(header, ";")
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	typ, sub, _ := strings.Cut(mediaType, "/")
	if typ != "image" || !isToken(sub) {
		if mediaType == "" {
			mediaType = "(none)"
		}
		return "", "", fmt.Errorf("the data URI media type is %s, it must be an image type such as data:image/jpeg;base64,", clip(mediaType, 40))
	}
	if len(params) < 2 || !strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") {
		return "", "", fmt.Errorf("the data URI is not base64-encoded: it must carry the data:%s;base64, prefix", mediaType)
	}
	if payload == "" {
		return "", "", errors.New("the data URI holds no data")
	}
	return mediaType, payload, nil
}

func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '+', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// b64Encoding picks padded or unpadded standard base64 from the payload.
func b64Encoding(payload string) *base64.Encoding {
	if strings.HasSuffix(payload, "=") || len(payload)%4 == 0 {
		return base64.StdEncoding
	}
	return base64.RawStdEncoding
}

// decodedLen is the exact decoded size of a well-formed payload.
func decodedLen(payload string) int64 {
	n := int64(len(payload))
	pad := int64(len(payload) - len(strings.TrimRight(payload, "=")))
	if pad > 2 {
		pad = 2
	}
	return (n - pad) * 3 / 4
}

// ParseDataURI decodes a data:image/<type>;base64,<data> URI. The media
// type is returned lower-cased as declared; it is not trusted for decoding.
func ParseDataURI(s string) (mediaType string, data []byte, err error) {
	mediaType, payload, err := splitDataURI(s)
	if err != nil {
		return "", nil, err
	}
	data, err = b64Encoding(payload).DecodeString(payload)
	if err != nil {
		return "", nil, fmt.Errorf("the data URI's base64 data is invalid: %v", err)
	}
	return mediaType, data, nil
}

// CheckDataURI validates a data URI's prefix and base64 payload without
// keeping the decoded bytes and returns the decoded size. With maxBytes > 0
// a payload that decodes to more than maxBytes is an error (checked from the
// length before any decoding).
func CheckDataURI(s string, maxBytes int64) (mediaType string, size int64, err error) {
	mediaType, payload, err := splitDataURI(s)
	if err != nil {
		return "", 0, err
	}
	size = decodedLen(payload)
	if maxBytes > 0 && size > maxBytes {
		return mediaType, size, &TooLargeError{Size: size, Limit: maxBytes}
	}
	n, err := io.Copy(io.Discard, base64.NewDecoder(b64Encoding(payload), strings.NewReader(payload)))
	if err != nil {
		return mediaType, n, fmt.Errorf("the data URI's base64 data is invalid: %v", err)
	}
	return mediaType, n, nil
}

// TooLargeError is an image over the byte limit. Size is -1 when the full
// size is unknown (the stream was cut at the limit).
type TooLargeError struct {
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("image is larger than %s, the limit is %s", FormatMB(e.Limit), FormatMB(e.Limit))
	}
	return fmt.Sprintf("image is %s, the limit is %s", FormatMB(e.Size), FormatMB(e.Limit))
}

// FormatMB formats a byte count in MB (2^20 bytes) with one decimal,
// dropping ".0": 25<<20 is "25 MB", 32715571 is "31.2 MB".
func FormatMB(n int64) string {
	v := float64(n) / (1 << 20)
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + " MB"
}

// EncodeDataURI returns data as a data:image/<type>;base64 URI, the type
// detected from the bytes (JPEG, PNG or WEBP).
func EncodeDataURI(data []byte) (string, error) {
	format := Sniff(data)
	if format == "" {
		return "", errors.New("not a JPEG, PNG or WEBP image")
	}
	return "data:image/" + format + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

// rasterTypes are the image media types (after "image/") a data URI may
// declare: raster formats. Vector and script-bearing types (svg+xml) are
// refused at submission; the bytes decide the decoder (JPEG, PNG, WEBP).
var rasterTypes = map[string]bool{
	"jpeg": true, "jpg": true, "pjpeg": true, "png": true, "apng": true, "webp": true,
	"gif": true, "bmp": true, "x-ms-bmp": true, "tiff": true, "avif": true,
	"heic": true, "heif": true, "jxl": true,
}

// IsRasterType reports whether mediaType (as returned by CheckDataURI, e.g.
// "image/png") names a raster image format.
func IsRasterType(mediaType string) bool {
	sub, ok := strings.CutPrefix(strings.ToLower(mediaType), "image/")
	return ok && rasterTypes[sub]
}
