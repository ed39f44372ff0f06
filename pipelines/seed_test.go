package pipelines

import "testing"

// fnv1a is FNV-1a 64 written out from its definition, the check on Seed.
func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// TestSeed: Seed is FNV-1a 64 over the parts joined by NUL bytes, the
// derivation every golden output was recorded with; distinct splits of the
// same text give distinct seeds.
func TestSeed(t *testing.T) {
	tests := []struct {
		parts []string
		want  uint64
	}{
		{nil, 14695981039346656037},
		{[]string{""}, 14695981039346656037},
		{[]string{"a"}, 0xaf63dc4c8601ec8c},
		{[]string{"job-123"}, fnv1a([]byte("job-123"))},
		{[]string{"images/astronaut.png", "left"}, fnv1a([]byte("images/astronaut.png\x00left"))},
	}
	for _, tc := range tests {
		if got := Seed(tc.parts...); got != tc.want {
			t.Errorf("Seed(%q) = %#x, want %#x", tc.parts, got, tc.want)
		}
	}
	if Seed("ab", "c") == Seed("a", "bc") {
		t.Error(`Seed("ab", "c") == Seed("a", "bc")`)
	}
}
