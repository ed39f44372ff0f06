package clip

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File names of the Hugging Face tokenizer folder.
const (
	VocabFile         = "vocab.json"
	MergesFile        = "merges.txt"
	ConfigFile        = "tokenizer_config.json"
	SpecialTokensFile = "special_tokens_map.json"
)

const (
	// maxMerges is how many merges CLIP uses: 49152 - 256 - 2, the Python slice
	// merges[1:49152-256-2+1] of both OpenAI's and Hugging Face's code.
	maxMerges = 49152 - 256 - 2
	// maxTokenID bounds ids read from vocab.json so a corrupt file cannot make
	// the id table huge.
	maxTokenID = 1 << 24
	// unboundedMaxLength: Hugging Face writes model_max_length = 1e30 for
	// "no limit"; anything above this means the CLIP default.
	unboundedMaxLength = 1_000_000
	// minMaxLength is the smallest usable model_max_length (start and end token).
	minMaxLength = 2
	// bpeFileName names the OpenAI file in FromBPE's errors.
	bpeFileName = "bpe_simple_vocab_16e6.txt.gz"
	// mergesHeader starts the header line of merges files.
	mergesHeader = "#version"
)

// FileError reports what is wrong with one tokenizer file; Line is the 1-based
// line for line-oriented files, 0 otherwise.
type FileError struct {
	Path string
	Line int
	Err  error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

func fileErr(path string, line int, format string, args ...any) error {
	return &FileError{Path: path, Line: line, Err: fmt.Errorf(format, args...)}
}

// merge is one parsed merge line.
type merge struct {
	left, right string
	line        int
}

// source describes where a vocabulary came from, for errors.
type source struct {
	vocabPath, mergesPath, padPath string
}

// Load reads a tokenizer folder in the Hugging Face layout. vocab.json and
// merges.txt are required; tokenizer_config.json and special_tokens_map.json are
// optional (the pad token of special_tokens_map.json wins, as in transformers;
// without one the end token pads). At most 48894 merges are used, as CLIP does.
func Load(dir string) (*Tokenizer, error) {
	vocabPath := filepath.Join(dir, VocabFile)
	ids, err := readVocab(vocabPath)
	if err != nil {
		return nil, err
	}
	mergesPath := filepath.Join(dir, MergesFile)
	merges, err := readMerges(mergesPath)
	if err != nil {
		return nil, err
	}
	maxLength, err := readMaxLength(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	pad, padPath, err := readPadToken(dir)
	if err != nil {
		return nil, err
	}
	src := source{vocabPath: vocabPath, mergesPath: mergesPath, padPath: padPath}
	return build(ids, merges, pad, maxLength, src)
}

// FromBPE builds a tokenizer from OpenAI's bpe_simple_vocab_16e6.txt.gz contents
// (the gz file's bytes), pad = end token, max length 77.
func FromBPE(gz []byte) (*Tokenizer, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fileErr(bpeFileName, 0, "not gzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fileErr(bpeFileName, 0, "decompress: %v", err)
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) < maxMerges+1 {
		return nil, fileErr(bpeFileName, 0, "%d lines, want a header and at least %d merges", len(lines), maxMerges)
	}
	merges := make([]merge, 0, maxMerges)
	for i, line := range lines[1 : maxMerges+1] {
		m, err := parseMerge(line, i+2, bpeFileName)
		if err != nil {
			return nil, err
		}
		merges = append(merges, m)
	}
	ids := openAIVocab(merges)
	src := source{vocabPath: bpeFileName, mergesPath: bpeFileName, padPath: bpeFileName}
	return build(ids, merges, endToken, DefaultMaxLength, src)
}

// openAIVocab derives the vocabulary as simple_tokenizer.py does; a repeated
// string keeps its last id, like Python's dict(zip(vocab, range(len(vocab)))).
func openAIVocab(merges []merge) map[string]int32 {
	order := byteOrder()
	words := make([]string, 0, 2*len(order)+len(merges)+2)
	for _, b := range order {
		words = append(words, string(byteSymbols[b]))
	}
	for _, b := range order {
		words = append(words, string(byteSymbols[b])+wordEnd)
	}
	for _, m := range merges {
		words = append(words, m.left+m.right)
	}
	words = append(words, startToken, endToken)
	ids := make(map[string]int32, len(words))
	for i, w := range words {
		ids[w] = int32(i)
	}
	return ids
}

// readVocab reads vocab.json.
func readVocab(path string) (map[string]int32, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parseVocab(data, path)
}

// parseVocab parses vocab.json: a JSON object of token string to id.
func parseVocab(data []byte, path string) (map[string]int32, error) {
	var raw map[string]int64
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fileErr(path, 0, "not a JSON object of token to integer id: %v", err)
	}
	if len(raw) == 0 {
		return nil, fileErr(path, 0, "empty vocabulary")
	}
	ids := make(map[string]int32, len(raw))
	for tok, id := range raw {
		if id < 0 || id >= maxTokenID {
			return nil, fileErr(path, 0, "token %q has id %d, want 0..%d", tok, id, maxTokenID-1)
		}
		ids[tok] = int32(id)
	}
	return ids, nil
}

// readMerges reads merges.txt.
func readMerges(path string) ([]merge, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parseMerges(data, path)
}

// parseMerges parses merges.txt: an optional "#version" header, then one
// "left right" pair per line (CRLF accepted); blank lines may only trail. At
// most maxMerges merges are read; later lines are ignored, as CLIP does.
func parseMerges(data []byte, path string) ([]merge, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	first := 0
	if len(lines) > 0 && strings.HasPrefix(lines[0], mergesHeader) {
		first = 1
	}
	merges := make([]merge, 0, min(len(lines), maxMerges))
	for i := first; i < len(lines) && len(merges) < maxMerges; i++ {
		m, err := parseMerge(strings.TrimSuffix(lines[i], "\r"), i+1, path)
		if err != nil {
			return nil, err
		}
		merges = append(merges, m)
	}
	return merges, nil
}

// parseMerge parses one merge line: exactly two symbols separated by white space.
func parseMerge(line string, lineNo int, path string) (merge, error) {
	parts := strings.Fields(line)
	if len(parts) != 2 {
		return merge{}, fileErr(path, lineNo, "malformed merge %q: want two symbols separated by a space", line)
	}
	return merge{left: parts[0], right: parts[1], line: lineNo}, nil
}

// readMaxLength reads model_max_length from tokenizer_config.json; a missing
// file or key gives 77, and so does a value above one million.
func readMaxLength(path string) (int, error) {
	var cfg struct {
		ModelMaxLength *json.Number `json:"model_max_length"`
	}
	found, err := readJSON(path, &cfg)
	if err != nil || !found || cfg.ModelMaxLength == nil {
		return DefaultMaxLength, err
	}
	v, err := strconv.ParseFloat(cfg.ModelMaxLength.String(), 64)
	switch {
	case err != nil:
		return 0, fileErr(path, 0, "model_max_length %s: %v", cfg.ModelMaxLength, err)
	case v > unboundedMaxLength:
		return DefaultMaxLength, nil
	case v < minMaxLength || v != math.Trunc(v):
		return 0, fileErr(path, 0, "model_max_length %s: want an integer of at least %d", cfg.ModelMaxLength, minMaxLength)
	}
	return int(v), nil
}

// readPadToken returns the declared pad token and the file declaring it:
// special_tokens_map.json first, then tokenizer_config.json, else the end token.
func readPadToken(dir string) (string, string, error) {
	for _, name := range []string{SpecialTokensFile, ConfigFile} {
		path := filepath.Join(dir, name)
		var cfg struct {
			PadToken json.RawMessage `json:"pad_token"`
		}
		found, err := readJSON(path, &cfg)
		if err != nil {
			return "", "", err
		}
		if !found {
			continue
		}
		pad, declared, err := parseTokenValue(cfg.PadToken)
		if err != nil {
			return "", "", fileErr(path, 0, "pad_token: %v", err)
		}
		if declared {
			return pad, path, nil
		}
	}
	return endToken, filepath.Join(dir, ConfigFile), nil
}

// parseTokenValue reads a special-token value: a string, an object with a
// string "content" (an AddedToken), or null/absent (not declared).
func parseTokenValue(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, fmt.Errorf("want a string or an object with a string \"content\", got %s", raw)
	}
	return *obj.Content, true, nil
}

// readJSON decodes an optional JSON object file; found is false when it does not exist.
func readJSON(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fileErr(path, 0, "%v", unwrapPath(err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return false, fileErr(path, 0, "invalid JSON: %v", err)
	}
	return true, nil
}

// readFile reads a required file, naming it in the error.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: unwrapPath(err)}
	}
	return data, nil
}

// unwrapPath drops the *fs.PathError wrapper, whose path FileError already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
