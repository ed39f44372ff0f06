// Package golden pins images bit for bit in tests: the digest of an
// image's pixels and the sha256sum-layout lists (testdata/golden.sha256)
// the golden tests compare against. Only tests import it.
package golden

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"strings"
)

// Digest is the SHA-256 (hex) of an image's size and RGBA pixels, row by
// row (stride padding excluded): two images have the same digest exactly
// when they are the same picture. Tests pin the output of a real run with
// it, so that a refactor that must not change behaviour is checked bit for
// bit.
func Digest(img *image.RGBA) string {
	h := sha256.New()
	w, ht := img.Rect.Dx(), img.Rect.Dy()
	fmt.Fprintf(h, "%dx%d\n", w, ht)
	for y := 0; y < ht; y++ {
		o := y * img.Stride
		h.Write(img.Pix[o : o+w*4])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ParseDigests reads a list of digests in sha256sum's layout: one
// "<64 hex digits>  <name>" a line (the name may hold spaces); blank lines
// and lines starting with # are skipped. A malformed line or a name given
// twice is an error naming its line.
func ParseDigests(text string) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != sha256.Size*2 || name == "" {
			return nil, fmt.Errorf("digest list line %d: want \"<64 hex digits>  <name>\", got %q", i+1, line)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("digest list line %d: %q listed twice", i+1, name)
		}
		out[name] = sum
	}
	return out, nil
}

// CheckDigest says whether img's digest is the one the list (ParseDigests'
// layout) records for name; the error names the image, both digests and
// the line to record when the change is meant.
func CheckDigest(list, name string, img *image.RGBA) error {
	want, err := ParseDigests(list)
	if err != nil {
		return err
	}
	got := Digest(img)
	switch w, ok := want[name]; {
	case !ok:
		return fmt.Errorf("no digest recorded for %q (record %q)", name, got+"  "+name)
	case w != got:
		return fmt.Errorf("%q: digest %s, recorded %s: the output pixels changed (record %q if that is meant)", name, got, w, got+"  "+name)
	}
	return nil
}
