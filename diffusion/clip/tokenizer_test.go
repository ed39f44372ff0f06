package clip

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// bpePath is OpenAI's vocabulary file in the shared test data, relative to this package.
const bpePath = "../../../shared/testdata/clip/bpe_simple_vocab_16e6.txt.gz"

// CLIP's special ids and context length.
const (
	clipBOS    = 49406
	clipEOS    = 49407
	clipVocab  = 49408
	contextLen = 77
)

var (
	refOnce sync.Once
	refTok  *Tokenizer
	refErr  error
)

// reference returns the tokenizer built from the real vocabulary file, loaded once.
// A missing file skips the test, or fails it when CI is set.
func reference(tb testing.TB) *Tokenizer {
	tb.Helper()
	if _, err := os.Stat(bpePath); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("CLIP vocabulary %s is missing (CI must provide ../shared): %v", bpePath, err)
		}
		tb.Skipf("CLIP vocabulary %s not present: %v", bpePath, err)
	}
	refOnce.Do(func() {
		gz, err := os.ReadFile(bpePath)
		if err != nil {
			refErr = err
			return
		}
		refTok, refErr = FromBPE(gz)
	})
	if refErr != nil {
		tb.Fatalf("FromBPE(%s): %v", bpePath, refErr)
	}
	return refTok
}

func TestEncodeReadmeReferences(t *testing.T) {
	tok := reference(t)
	tests := []struct {
		text string
		want []int64
	}{
		{"a photo of a cat", []int64{49406, 320, 1125, 539, 320, 2368, 49407}},
		{"a photo of a dog", []int64{49406, 320, 1125, 539, 320, 1929, 49407}},
		{"Hello, world!", []int64{49406, 3306, 267, 1002, 256, 49407}},
		{"", []int64{49406, 49407}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestEncodeReferenceFile compares with testdata/reference.jsonl, produced by
// testdata/reference_tokenizer.py (OpenAI's code without ftfy) on the same
// vocabulary: apostrophes, HTML entities, white space, final sigma, U+0130,
// scripts, emoji and special tokens written in the text.
func TestEncodeReferenceFile(t *testing.T) {
	tok := reference(t)
	f, err := os.Open("testdata/reference.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var rec struct {
			Text string  `json:"text"`
			IDs  []int64 `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("reference line %d: %v", n+1, err)
		}
		n++
		if got := tok.Encode(rec.Text); !slices.Equal(got, rec.IDs) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", rec.Text, got, rec.IDs)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d reference lines read", n)
	}
}

func TestAccessors(t *testing.T) {
	tok := reference(t)
	tests := []struct {
		name      string
		got, want int64
	}{
		{"BOS", tok.BOS(), clipBOS},
		{"EOS", tok.EOS(), clipEOS},
		{"PadID", tok.PadID(), clipEOS},
		{"MaxLength", int64(tok.MaxLength()), contextLen},
		{"VocabSize", int64(tok.VocabSize()), clipVocab},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestEncodePadded(t *testing.T) {
	tok := reference(t)
	cat := []int64{49406, 320, 1125, 539, 320, 2368, 49407}
	tests := []struct {
		name   string
		text   string
		maxLen int
		want   []int64
	}{
		{"pads with end token", "a photo of a cat", 10, append(slices.Clone(cat), 49407, 49407, 49407)},
		{"exact fit", "a photo of a cat", 7, cat},
		{"truncates keeping end", "a photo of a cat", 5, []int64{49406, 320, 1125, 539, 49407}},
		{"one short of fit", "a photo of a cat", 6, []int64{49406, 320, 1125, 539, 320, 49407}},
		{"start and end only", "a photo of a cat", 2, []int64{49406, 49407}},
		{"one id is the end token", "a photo of a cat", 1, []int64{49407}},
		{"zero length", "a photo of a cat", 0, []int64{}},
		{"negative length", "a photo of a cat", -3, []int64{}},
		{"empty text", "", 4, []int64{49406, 49407, 49407, 49407}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tok.EncodePadded(tc.text, tc.maxLen); !slices.Equal(got, tc.want) {
				t.Errorf("EncodePadded(%q, %d) = %v, want %v", tc.text, tc.maxLen, got, tc.want)
			}
		})
	}
}

func TestEncodePaddedTruncatesLongPrompt(t *testing.T) {
	tok := reference(t)
	prompt := strings.TrimSpace(strings.Repeat("cat ", 200))
	full := tok.Encode(prompt)
	if len(full) != 202 {
		t.Fatalf("Encode of 200 words gave %d ids, want 202", len(full))
	}
	got := tok.EncodePadded(prompt, contextLen)
	if len(got) != contextLen {
		t.Fatalf("len = %d, want %d", len(got), contextLen)
	}
	if got[0] != clipBOS || got[contextLen-1] != clipEOS {
		t.Fatalf("first %d last %d, want %d and %d", got[0], got[contextLen-1], clipBOS, clipEOS)
	}
	if !slices.Equal(got[:contextLen-1], full[:contextLen-1]) {
		t.Fatalf("truncated ids are not the prefix of the full encoding")
	}
	if got[1] != 2368 || got[contextLen-2] != 2368 {
		t.Fatalf("body ids %d..%d, want the id of \"cat\" (2368)", got[1], got[contextLen-2])
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	tok := reference(t)
	tests := []struct {
		text, want string
	}{
		{"café ☕ Grüße", "café ☕ grüße"},
		{"a photo of a cat", "a photo of a cat"},
		{"  東京 タワー  ", "東京 タワー"},
		{"emoji 👗👠 dress", "emoji 👗👠 dress"},
		{"Hello, world!", "hello , world !"},
		{"", ""},
	}
	for _, tc := range tests {
		got, err := tok.Decode(tok.Encode(tc.text))
		if err != nil {
			t.Fatalf("Decode(Encode(%q)): %v", tc.text, err)
		}
		if got != tc.want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestDecodeRejectsUnknownIDs(t *testing.T) {
	tok := reference(t)
	for _, id := range []int64{-1, clipVocab, 1 << 40} {
		if _, err := tok.Decode([]int64{clipBOS, id}); err == nil || !strings.Contains(err.Error(), "not in the vocabulary") {
			t.Errorf("Decode(%d) error = %v, want 'not in the vocabulary'", id, err)
		}
	}
}

// TestEncodeConcurrent encodes from many goroutines (run with -race) and checks
// every result against the single-threaded one.
func TestEncodeConcurrent(t *testing.T) {
	tok := reference(t)
	texts := []string{"a photo of a cat", "Hello, world!", "café ☕ Grüße", "red dress, studio light"}
	want := make([][]int64, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds*len(texts))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for i, s := range texts {
					if got := tok.Encode(s); !slices.Equal(got, want[i]) {
						errs <- s
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differed", s)
	}
}

func FuzzEncode(f *testing.F) {
	tok := reference(f)
	for _, s := range []string{
		"", "a photo of a cat", "Hello, world!", "café ☕ Grüße", "<|endoftext|><|startoftext|>",
		"ΟΔΟΣ", "İ", "&amp;amp;", "\xff\xfe invalid", strings.Repeat("ab", 100), "it's 1,234",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := tok.Encode(text)
		if len(ids) < 2 || ids[0] != clipBOS || ids[len(ids)-1] != clipEOS {
			t.Fatalf("Encode(%q) = %v: want %d first and %d last", text, ids, clipBOS, clipEOS)
		}
		for _, id := range ids {
			if id < 0 || id >= clipVocab {
				t.Fatalf("Encode(%q): id %d out of range", text, id)
			}
		}
		padded := tok.EncodePadded(text, contextLen)
		if len(padded) != contextLen || padded[0] != clipBOS {
			t.Fatalf("EncodePadded(%q) = %v", text, padded)
		}
		if n := min(len(ids), contextLen) - 1; !slices.Equal(padded[:n], ids[:n]) || padded[n] != clipEOS {
			t.Fatalf("EncodePadded(%q) = %v, not the framed prefix of %v", text, padded, ids)
		}
		if _, err := tok.Decode(ids); err != nil {
			t.Fatalf("Decode(Encode(%q)): %v", text, err)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	tok := reference(b)
	const prompt = "a photo of a woman wearing a red silk evening dress, studio lighting, " +
		"highly detailed, 8k, fashion editorial, trending on artstation"
	b.ReportAllocs()
	for b.Loop() {
		tok.EncodePadded(prompt, contextLen)
	}
}
