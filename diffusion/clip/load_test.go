package clip

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestWriteHFRoundTrip(t *testing.T) {
	ref := reference(t)
	texts := []string{"a photo of a cat", "Hello, world!", "café ☕ Grüße", "", "it's 8k <|endoftext|>"}
	tests := []struct {
		pad     string
		wantPad int64
	}{
		{endToken, clipEOS},
		{"!", 0},
		{"", clipEOS},
	}
	for _, tc := range tests {
		t.Run(tc.pad, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tokenizer")
			if err := ref.WriteHF(dir, tc.pad); err != nil {
				t.Fatalf("WriteHF: %v", err)
			}
			got, err := Load(dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.PadID() != tc.wantPad || got.BOS() != clipBOS || got.EOS() != clipEOS || got.MaxLength() != contextLen {
				t.Fatalf("pad %d bos %d eos %d max %d, want %d %d %d %d", got.PadID(), got.BOS(), got.EOS(),
					got.MaxLength(), tc.wantPad, clipBOS, clipEOS, contextLen)
			}
			if !slices.Equal(got.tokens, ref.tokens) || !maps.Equal(got.merges, ref.merges) {
				t.Fatalf("loaded vocabulary or merges differ from FromBPE's")
			}
			for _, s := range texts {
				if a, b := got.Encode(s), ref.Encode(s); !slices.Equal(a, b) {
					t.Errorf("Encode(%q): loaded %v, FromBPE %v", s, a, b)
				}
			}
			padded := got.EncodePadded("a photo of a cat", contextLen)
			want := append([]int64{49406, 320, 1125, 539, 320, 2368, 49407}, slices.Repeat([]int64{tc.wantPad}, contextLen-7)...)
			if !slices.Equal(padded, want) {
				t.Fatalf("EncodePadded = %v, want %v", padded, want)
			}
		})
	}
}

func TestWriteHFRejectsUnknownPad(t *testing.T) {
	ref := reference(t)
	err := ref.WriteHF(t.TempDir(), "<pad>")
	if err == nil || !strings.Contains(err.Error(), `pad token "<pad>" is not in the vocabulary`) {
		t.Fatalf("WriteHF with unknown pad: err = %v", err)
	}
}

// tinyFolder is a minimal Hugging Face tokenizer folder: the 512 byte symbols,
// the merges "h i</w>" and "a a", and the special tokens.
type tinyFolder struct {
	vocab   map[string]int
	merges  string
	config  string // tokenizer_config.json, omitted when ""
	special string // special_tokens_map.json, omitted when ""
}

func newTinyFolder() *tinyFolder {
	vocab := map[string]int{}
	for _, b := range byteOrder() {
		vocab[string(byteSymbols[b])] = len(vocab)
	}
	for _, b := range byteOrder() {
		vocab[string(byteSymbols[b])+wordEnd] = len(vocab)
	}
	for _, tok := range []string{"hi</w>", "aa", startToken, endToken} {
		vocab[tok] = len(vocab)
	}
	return &tinyFolder{vocab: vocab, merges: "#version: 0.2\nh i</w>\na a\n"}
}

// write stores the folder under a new temporary directory and returns its path.
func (f *tinyFolder) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	vocab, err := json.Marshal(f.vocab)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{VocabFile: string(vocab), MergesFile: f.merges, ConfigFile: f.config, SpecialTokensFile: f.special}
	for name, data := range files {
		if data == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadTinyFolder(t *testing.T) {
	tok, err := Load(newTinyFolder().write(t))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int64 { return int64(tok.ids[s]) }
	bos, eos := id(startToken), id(endToken)
	tests := []struct {
		text string
		want []int64
	}{
		{"hi", []int64{bos, id("hi</w>"), eos}},
		{"HI hi", []int64{bos, id("hi</w>"), id("hi</w>"), eos}},
		{"aaa", []int64{bos, id("aa"), id("a</w>"), eos}},
		{"aaaa", []int64{bos, id("aa"), id("a"), id("a</w>"), eos}},
		{"ha", []int64{bos, id("h"), id("a</w>"), eos}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if tok.PadID() != eos || tok.MaxLength() != DefaultMaxLength {
		t.Errorf("pad %d max %d, want %d %d (no config files)", tok.PadID(), tok.MaxLength(), eos, DefaultMaxLength)
	}
}

func TestLoadConfig(t *testing.T) {
	const bang = 0 // "!" is the first byte symbol
	eos := int64(newTinyFolder().vocab[endToken])
	tests := []struct {
		name, config, special string
		wantPad               int64
		wantMax               int
	}{
		{"no config", "", "", eos, 77},
		{"config pad string", `{"pad_token": "!", "model_max_length": 77}`, "", bang, 77},
		{"special pad object", "", `{"pad_token": {"content": "!", "lstrip": false}}`, bang, 77},
		{"special wins over config", `{"pad_token": "!"}`, `{"pad_token": "<|endoftext|>"}`, eos, 77},
		{"special null falls back to config", `{"pad_token": "!"}`, `{"pad_token": null}`, bang, 77},
		{"unbounded max length", `{"model_max_length": 1000000000000000019884624838656}`, "", eos, 77},
		{"max length 128", `{"model_max_length": 128}`, "", eos, 128},
		{"max length 1e6", `{"model_max_length": 1e6}`, "", eos, 1_000_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTinyFolder()
			f.config, f.special = tc.config, tc.special
			tok, err := Load(f.write(t))
			if err != nil {
				t.Fatal(err)
			}
			if tok.PadID() != tc.wantPad || tok.MaxLength() != tc.wantMax {
				t.Fatalf("pad %d max %d, want %d %d", tok.PadID(), tok.MaxLength(), tc.wantPad, tc.wantMax)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(f *tinyFolder) // before writing
		after func(dir string)    // after writing, may be nil
		file  string              // the file the error must name
		line  int
		want  string // error text after "<dir>/<file>: "; {vocab} is the vocab.json path
	}{
		{"missing vocab", nil, func(dir string) { os.Remove(filepath.Join(dir, VocabFile)) },
			VocabFile, 0, "no such file or directory"},
		{"vocab not JSON", nil, func(dir string) { os.WriteFile(filepath.Join(dir, VocabFile), []byte("[1,2]"), 0o644) },
			VocabFile, 0, "not a JSON object of token to integer id: json: cannot unmarshal array into Go value of type map[string]int64"},
		{"vocab without end token", func(f *tinyFolder) { delete(f.vocab, endToken) }, nil,
			VocabFile, 0, `missing "<|endoftext|>"`},
		{"vocab without start token", func(f *tinyFolder) { delete(f.vocab, startToken) }, nil,
			VocabFile, 0, `missing "<|startoftext|>"`},
		{"vocab without a byte symbol", func(f *tinyFolder) { delete(f.vocab, "\u0120</w>") }, nil,
			VocabFile, 0, `missing "Ġ</w>"`},
		{"shared id", func(f *tinyFolder) { f.vocab["aa"] = f.vocab["hi</w>"] }, nil,
			VocabFile, 0, `tokens "aa" and "hi</w>" share id 512`},
		{"negative id", func(f *tinyFolder) { f.vocab["aa"] = -4 }, nil,
			VocabFile, 0, `token "aa" has id -4, want 0..16777215`},
		{"missing merges", nil, func(dir string) { os.Remove(filepath.Join(dir, MergesFile)) },
			MergesFile, 0, "no such file or directory"},
		{"merge line with one symbol", func(f *tinyFolder) { f.merges = "#version: 0.2\nh i</w>\naa\n" }, nil,
			MergesFile, 3, `malformed merge "aa": want two symbols separated by a space`},
		{"merge line with three symbols", func(f *tinyFolder) { f.merges = "#version: 0.2\nh i </w>\n" }, nil,
			MergesFile, 2, `malformed merge "h i </w>": want two symbols separated by a space`},
		{"blank line inside merges", func(f *tinyFolder) { f.merges = "#version: 0.2\n\nh i</w>\n" }, nil,
			MergesFile, 2, `malformed merge "": want two symbols separated by a space`},
		{"merge result not in vocab", func(f *tinyFolder) { f.merges += "b c\n" }, nil,
			MergesFile, 4, `merge result "bc" is not in the vocabulary`},
		{"merge part not in vocab", func(f *tinyFolder) { f.merges += "xyz c\n" }, nil,
			MergesFile, 4, `merge symbol "xyz" is not in the vocabulary`},
		{"pad token not in vocab", func(f *tinyFolder) { f.config = `{"pad_token": "<pad>"}` }, nil,
			ConfigFile, 0, `pad_token "<pad>" is not in {vocab}`},
		{"pad token of wrong type", func(f *tinyFolder) { f.special = `{"pad_token": 7}` }, nil,
			SpecialTokensFile, 0, `pad_token: want a string or an object with a string "content", got 7`},
		{"config not JSON", func(f *tinyFolder) { f.config = `{"pad_token": ` }, nil,
			ConfigFile, 0, "invalid JSON: unexpected EOF"},
		{"fractional max length", func(f *tinyFolder) { f.config = `{"model_max_length": 76.5}` }, nil,
			ConfigFile, 0, "model_max_length 76.5: want an integer of at least 2"},
		{"max length too small", func(f *tinyFolder) { f.config = `{"model_max_length": 1}` }, nil,
			ConfigFile, 0, "model_max_length 1: want an integer of at least 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTinyFolder()
			if tc.edit != nil {
				tc.edit(f)
			}
			dir := f.write(t)
			if tc.after != nil {
				tc.after(dir)
			}
			_, err := Load(dir)
			path := filepath.Join(dir, tc.file)
			want := path + ": " + tc.want
			if tc.line > 0 {
				want = path + ": line " + strconv.Itoa(tc.line) + ": " + tc.want
			}
			want = strings.ReplaceAll(want, "{vocab}", filepath.Join(dir, VocabFile))
			if err == nil || err.Error() != want {
				t.Fatalf("Load error\n got %v\nwant %s", err, want)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != path || fe.Line != tc.line {
				t.Fatalf("error %#v: want a *FileError for %s line %d", err, path, tc.line)
			}
		})
	}
}

func TestLoadMissingFileIsNotExist(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing folder: %v, want fs.ErrNotExist", err)
	}
}

// gzipLines compresses lines joined by newlines.
func gzipLines(t *testing.T, lines []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(strings.Join(lines, "\n"))); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFromBPEErrors(t *testing.T) {
	broken := slices.Repeat([]string{"a b"}, maxMerges+1)
	broken[0], broken[4] = "header", "abc"
	tests := []struct {
		name string
		gz   []byte
		want string
	}{
		{"not gzip", []byte("plain text"), "bpe_simple_vocab_16e6.txt.gz: not gzip: gzip: invalid header"},
		{"too short", gzipLines(t, []string{"header", "a b"}), "bpe_simple_vocab_16e6.txt.gz: 2 lines, want a header and at least 48894 merges"},
		{"malformed line", gzipLines(t, broken), `bpe_simple_vocab_16e6.txt.gz: line 5: malformed merge "abc": want two symbols separated by a space`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FromBPE(tc.gz); err == nil || err.Error() != tc.want {
				t.Fatalf("FromBPE error\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestFromBPERepeatedMerge builds a vocabulary whose 48894 merges are all "a b":
// as in Python's dict(zip(...)), the repeated string "ab" keeps its last id
// (512 + 48893) and the pair its last rank; lines after 48894 are ignored.
func TestFromBPERepeatedMerge(t *testing.T) {
	lines := slices.Repeat([]string{"a b"}, maxMerges+1)
	lines[0] = "header"
	lines = append(lines, "not a merge line at all", "")
	tok, err := FromBPE(gzipLines(t, lines))
	if err != nil {
		t.Fatal(err)
	}
	const abID = 512 + maxMerges - 1
	a, bEnd, cEnd := int64(tok.ids["a"]), int64(tok.ids["b</w>"]), int64(tok.ids["c</w>"])
	tests := []struct {
		text string
		want []int64
	}{
		{"ab", []int64{clipBOS, a, bEnd, clipEOS}},
		{"abc", []int64{clipBOS, abID, cEnd, clipEOS}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if rule := tok.merges[pairKey(int32(a), int32(tok.ids["b"]))]; rule.rank != maxMerges-1 || rule.id != abID {
		t.Errorf("rule for a b = %+v, want rank %d id %d", rule, maxMerges-1, abID)
	}
}

// TestLoadIgnoresMergesBeyondCLIPLimit: like CLIPTokenizer, only the first 48894
// merges are read, so a malformed line after them is never parsed.
func TestLoadIgnoresMergesBeyondCLIPLimit(t *testing.T) {
	f := newTinyFolder()
	f.merges = "#version: 0.2\n" + strings.Repeat("h i</w>\n", maxMerges) + "not a merge\n"
	tok, err := Load(f.write(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tok.merges); n != 1 {
		t.Fatalf("%d distinct merge rules, want 1", n)
	}
	if got, want := tok.Encode("hi"), []int64{tok.BOS(), int64(tok.ids["hi</w>"]), tok.EOS()}; !slices.Equal(got, want) {
		t.Fatalf("Encode(hi) = %v, want %v", got, want)
	}
}
