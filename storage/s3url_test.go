package storage

import (
	"strings"
	"testing"
)

func TestParseS3URL(t *testing.T) {
	tests := []struct {
		in, bucket, prefix string
		ok                 bool
	}{
		{"s3://results", "results", "", true},
		{"s3://results/", "results", "", true},
		{"s3://my.bucket-1/prod/eu", "my.bucket-1", "prod/eu", true},
		{"s3://my-bucket/prod/", "my-bucket", "prod", true},
		{"s3://ab", "", "", false},               // too short
		{"s3://Results", "", "", false},          // upper case
		{"s3://a..b", "", "", false},             // double dot
		{"s3://-bucket", "", "", false},          // starts with a hyphen
		{"s3://bucket/a/../b", "", "", false},    // dot segment
		{"s3://bucket//a", "", "", false},        // empty segment
		{"s3://bucket/a b", "", "", false},       // space
		{"https://bucket/prefix", "", "", false}, // not s3://
		{"local", "", "", false},
		{"", "", "", false},
	}
	for _, tc := range tests {
		b, p, err := ParseS3URL(tc.in)
		if (err == nil) != tc.ok || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseS3URL(%q) = %q, %q, %v; want %q, %q, ok=%v", tc.in, b, p, err, tc.bucket, tc.prefix, tc.ok)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in, host string
		secure   bool
		ok       bool
	}{
		{"", "s3.amazonaws.com", true, true},
		{"http://127.0.0.1:9000", "127.0.0.1:9000", false, true},
		{"https://s3.eu-central-1.amazonaws.com/", "s3.eu-central-1.amazonaws.com", true, true},
		{"http://[::1]:7070", "[::1]:7070", false, true},
		{"127.0.0.1:9000", "", false, false},
		{"ftp://x", "", false, false},
		{"http://user:pw@x", "", false, false},
		{"http://x/bucket", "", false, false},
		{"http://x?a=1", "", false, false},
	}
	for _, tc := range tests {
		h, sec, err := ParseEndpoint(tc.in)
		if (err == nil) != tc.ok || h != tc.host || sec != tc.secure {
			t.Errorf("ParseEndpoint(%q) = %q, %v, %v; want %q, %v, ok=%v", tc.in, h, sec, err, tc.host, tc.secure, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("ParseEndpoint(%q): the error echoes the password: %v", tc.in, err)
		}
	}
}

// FuzzParseS3URL: an accepted URL yields a valid bucket and a prefix that
// is a valid key path, and rebuilding the URL parses to the same parts.
func FuzzParseS3URL(f *testing.F) {
	for _, s := range []string{"s3://results", "s3://b-1/p/q/", "s3://a..b", "s3://bucket/../x", "s3://x/%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, p, err := ParseS3URL(s)
		if err != nil {
			return
		}
		if CheckBucket(b) != nil {
			t.Fatalf("%q: accepted bucket %q is invalid", s, b)
		}
		if p != "" && (checkPath(p) != nil || strings.HasSuffix(p, "/")) {
			t.Fatalf("%q: accepted prefix %q is invalid", s, p)
		}
		u := "s3://" + b
		if p != "" {
			u += "/" + p
		}
		if b2, p2, err := ParseS3URL(u); err != nil || b2 != b || p2 != p {
			t.Fatalf("%q: round trip %q gives %q, %q, %v", s, u, b2, p2, err)
		}
	})
}
