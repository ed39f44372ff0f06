package clip

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"collapse and strip", "  A\tPhoto\n\n of   a CAT  ", "a photo of a cat"},
		{"unicode white space", "\u00a0x\u3000y\u2028z\u0085", "x y z"},
		{"information separators strip only", "\x1cx\x1fy\x1e", "x\x1fy"},
		{"double unescape", "&amp;lt;b&amp;gt; Tom &amp; Jerry", "<b> tom & jerry"},
		{"final sigma", "ΟΔΟΣ ΣΑΣ", "οδος σας"},
		{"dotted capital I", "İstanbul", "i\u0307stanbul"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
		{"empty", "   ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cleanText(tc.in); got != tc.want {
				t.Errorf("cleanText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLowerPythonFinalSigma(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Σ", "σ"},                 // nothing cased before
		{"ΑΣ", "ας"},               // end of text
		{"ΑΣΑ", "ασα"},             // cased letter after
		{"ΑΣ'Β", "ασ'β"},           // apostrophe is case-ignorable, cased after
		{"ΑΣ.", "ας."},             // nothing cased after
		{"Α'Σ", "α'ς"},             // case-ignorable between
		{"1Σ", "1σ"},               // digit is not cased
		{"Α\u0301Σ ", "α\u0301ς "}, // combining mark skipped
	}
	for _, tc := range tests {
		if got := lowerPython(tc.in); got != tc.want {
			t.Errorf("lowerPython(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPieces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"it's the cat's", []string{"it", "'s", "the", "cat", "'s"}},
		{"we're 123 ok!!", []string{"we", "'re", "1", "2", "3", "ok", "!!"}},
		{"a<|endoftext|>b", []string{"a", "<|endoftext|>", "b"}},
		{"'\u017fx", []string{"'\u017f", "x"}}, // long s folds to s
		{"s\u0345!\u0345?", []string{"s", "!", "?"}},
		{"東京タワー", []string{"東京タワー"}},
	}
	for _, tc := range tests {
		if got := pieceRE.FindAllString(tc.in, -1); !slices.Equal(got, tc.want) {
			t.Errorf("pieces(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestByteSymbols(t *testing.T) {
	tests := []struct {
		b    byte
		want rune
	}{
		{'!', '!'}, {'a', 'a'}, {0xff, 'ÿ'}, {0x00, 'Ā'}, {' ', 'Ġ'}, {'\n', 'Ċ'}, {0xad, 'Ń'}, {0x7f, 'ġ'},
	}
	for _, tc := range tests {
		if got := byteSymbols[tc.b]; got != tc.want {
			t.Errorf("byteSymbols[%#x] = %q, want %q", tc.b, got, tc.want)
		}
	}
	seen := map[rune]bool{}
	for _, r := range byteSymbols {
		seen[r] = true
	}
	if len(seen) != 256 {
		t.Fatalf("%d distinct symbols, want 256", len(seen))
	}
	if order := byteOrder(); order[0] != '!' || order[93] != '~' || order[188] != 0 || order[255] != 0xad {
		t.Fatalf("byteOrder starts %q, ends %#x", order[:2], order[255])
	}
}

func TestApplyMerge(t *testing.T) {
	const a, b, ab = 1, 2, 9
	tests := []struct {
		in, want []int32
		left     int32
		right    int32
	}{
		{[]int32{a, a, a}, []int32{ab, a}, a, a},
		{[]int32{a, a, a, a}, []int32{ab, ab}, a, a},
		{[]int32{a, b, a, b}, []int32{ab, ab}, a, b},
		{[]int32{b, a, a, b}, []int32{b, a, ab}, a, b},
		{[]int32{b, b}, []int32{b, b}, a, b},
	}
	for _, tc := range tests {
		got := applyMerge(slices.Clone(tc.in), rankedPair{left: tc.left, right: tc.right, rule: mergeRule{id: ab}})
		if !slices.Equal(got, tc.want) {
			t.Errorf("applyMerge(%v, %d %d) = %v, want %v", tc.in, tc.left, tc.right, got, tc.want)
		}
	}
}

func TestUnescapeHTML(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Tom &amp; Jerry", "Tom & Jerry"},
		{"&lt;b&gt;", "<b>"},
		{"&amp", "&"},
		{"&ampx", "&x"},
		{"&notin; &notit;", "∉ ¬it;"},
		{"&nGt; &semi;", "≫\u20d2 ;"},
		{"&unknown;", "&unknown;"},
		{"&#65;&#x42;&#X43", "ABC"},
		{"&#x; &#;", "&#x; &#;"},
		{"&#0;|&#1;|&#x80;|&#x81;|&#xd800;|&#x110000;|&#xfffe;|&#99999999999;", "\ufffd||€|\u0081|\ufffd|\ufffd||\ufffd"},
		{"no entities", "no entities"},
	}
	for _, tc := range tests {
		if got := unescapeHTML(tc.in); got != tc.want {
			t.Errorf("unescapeHTML(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzUnescapeHTML(f *testing.F) {
	for _, s := range []string{"&amp;", "&#x41;", "&#99999999999;", "&ampx", "&notin", "&#x;", "&&;;##"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := unescapeHTML(s)
		if !strings.Contains(s, "&") && got != s {
			t.Fatalf("unescapeHTML(%q) = %q changed text without '&'", s, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("unescapeHTML(%q) = %q is not valid UTF-8", s, got)
		}
	})
}

func FuzzParseMerges(f *testing.F) {
	for _, s := range []string{"#version: 0.2\na b\n", "a b\r\nc d\r\n", "\n\n", "a b c", "#version\n\nx y"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		merges, err := parseMerges(data, MergesFile)
		if err != nil {
			if !strings.HasPrefix(err.Error(), MergesFile+": line ") {
				t.Fatalf("error %q does not name the file and line", err)
			}
			return
		}
		if len(merges) > maxMerges {
			t.Fatalf("%d merges, more than %d", len(merges), maxMerges)
		}
		for _, m := range merges {
			if len(strings.Fields(m.left)) != 1 || len(strings.Fields(m.right)) != 1 {
				t.Fatalf("merge %+v has empty or spaced symbols", m)
			}
		}
	})
}

func FuzzParseVocab(f *testing.F) {
	for _, s := range []string{`{"a": 0}`, `{"a": -1}`, `{"a": 1.5}`, `[]`, `{"a": 99999999999}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ids, err := parseVocab(data, VocabFile)
		if err != nil {
			if !strings.HasPrefix(err.Error(), VocabFile+": ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for tok, id := range ids {
			if id < 0 || id >= maxTokenID {
				t.Fatalf("token %q id %d out of range", tok, id)
			}
		}
		if _, err := tokenTable(ids, VocabFile); err != nil && !strings.HasPrefix(err.Error(), VocabFile+": ") {
			t.Fatalf("tokenTable error %q does not name the file", err)
		}
	})
}
