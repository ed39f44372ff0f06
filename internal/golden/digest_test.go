package golden

import (
	"image"
	"strings"
	"testing"
)

// zeroDigest is the digest of a black 4x3 image: sha256("4x3\n" and 48
// zero bytes).
const zeroDigest = "c8bc8ab76f36fb644f8a288012f31f331e50b450adf9387ff22adfa2eeee1518"

// TestParseDigests: the sha256sum layout with names holding spaces,
// comments and blank lines; malformed and repeated lines are errors that
// name their line.
func TestParseDigests(t *testing.T) {
	h := strings.Repeat("ab", 32)
	got, err := ParseDigests("# note\n\n" + h + "  text/arms out\r\n" + zeroDigest + "  a\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["text/arms out"] != h || got["a"] != zeroDigest {
		t.Fatalf("parsed %v", got)
	}
	for _, c := range []struct{ text, line string }{
		{h + " one-space", "line 1"},
		{"zz" + h[2:] + "  a", "line 1"},
		{h[:62] + "  a", "line 1"},
		{"# c\n" + h + "  ", "line 2"},
		{h + "  a\n" + h + "  a", "line 2: \"a\" listed twice"},
	} {
		if _, err := ParseDigests(c.text); err == nil || !strings.Contains(err.Error(), c.line) {
			t.Errorf("%q: error %v, want one naming %s", c.text, err, c.line)
		}
	}
}

// TestCheckDigest: a recorded digest passes; another or a missing one is
// an error that gives the line to record.
func TestCheckDigest(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	list := zeroDigest + "  black\n" + strings.Repeat("0", 64) + "  other\n"
	if err := CheckDigest(list, "black", img); err != nil {
		t.Fatalf("recorded digest: %v", err)
	}
	for _, name := range []string{"other", "missing"} {
		err := CheckDigest(list, name, img)
		if err == nil || !strings.Contains(err.Error(), zeroDigest+"  "+name) {
			t.Errorf("%s: error %v, want one giving the line to record", name, err)
		}
	}
	if err := CheckDigest("bad", "black", img); err == nil {
		t.Error("a malformed list passed")
	}
}

// FuzzParseDigests: the parser never panics, and what it accepts round
// trips through the layout it reads.
func FuzzParseDigests(f *testing.F) {
	f.Add(zeroDigest + "  a b\n# c\n\n")
	f.Add("x")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseDigests(text)
		if err != nil {
			return
		}
		var b strings.Builder
		for name, sum := range got {
			b.WriteString(sum + "  " + name + "\n")
		}
		again, err := ParseDigests(b.String())
		if err != nil || len(again) != len(got) {
			t.Fatalf("round trip of %q: %v, %d of %d", text, err, len(again), len(got))
		}
		for name, sum := range got {
			if again[name] != sum {
				t.Fatalf("round trip changed %q: %q -> %q", name, sum, again[name])
			}
		}
	})
}

// TestDigest: the digest sees size and every pixel, and not the stride
// padding of a sub-image.
func TestDigest(t *testing.T) {
	a := image.NewRGBA(image.Rect(0, 0, 4, 3))
	b := image.NewRGBA(image.Rect(0, 0, 3, 4))
	if Digest(a) == Digest(b) {
		t.Fatal("4x3 and 3x4 black images have the same digest")
	}
	if got, want := Digest(a), zeroDigest; got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	c := image.NewRGBA(image.Rect(0, 0, 4, 3))
	c.Pix[len(c.Pix)-1] = 1
	if Digest(a) == Digest(c) {
		t.Fatal("one changed byte does not change the digest")
	}
	big := image.NewRGBA(image.Rect(0, 0, 8, 3))
	for i := range big.Pix {
		big.Pix[i] = 9 // padding outside the sub-image must not count
	}
	sub := big.SubImage(image.Rect(0, 0, 4, 3)).(*image.RGBA)
	for y := 0; y < 3; y++ {
		clear(sub.Pix[y*sub.Stride : y*sub.Stride+16])
	}
	if Digest(sub) != Digest(a) {
		t.Fatal("a sub-image's digest depends on the pixels outside it")
	}
}
