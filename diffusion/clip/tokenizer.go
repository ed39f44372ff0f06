package clip

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultMaxLength is CLIP's context length, used when tokenizer_config.json
// declares no usable model_max_length.
const DefaultMaxLength = 77

// Tokenizer encodes text into CLIP token ids. It is immutable after construction
// apart from its piece cache and is safe for concurrent use.
type Tokenizer struct {
	tokens     []string         // id -> token string ("" for unused ids)
	ids        map[string]int32 // token string -> id
	merges     map[uint64]mergeRule
	byteIDs    [256]int32 // id of each byte's symbol
	byteEndIDs [256]int32 // id of each byte's symbol + "</w>"
	bos, eos   int32
	pad        int32
	maxLength  int
	cache      pieceCache
}

// Encode returns ids with start and end tokens, no padding, no truncation.
func (t *Tokenizer) Encode(text string) []int64 {
	out := []int64{int64(t.bos)}
	out = t.appendTokens(out, text, -1)
	return append(out, int64(t.eos))
}

// EncodePadded returns exactly maxLen ids: start, tokens, end, then pad ids; when
// too long it truncates keeping the end token last. maxLen <= 0 gives no ids and
// maxLen 1 gives only the end token.
func (t *Tokenizer) EncodePadded(text string, maxLen int) []int64 {
	if maxLen <= 0 {
		return []int64{}
	}
	out := make([]int64, 1, maxLen+1)
	out[0] = int64(t.bos)
	out = t.appendTokens(out, text, maxLen)
	if len(out) >= maxLen {
		out = out[:maxLen]
		out[maxLen-1] = int64(t.eos)
		return out
	}
	out = append(out, int64(t.eos))
	for len(out) < maxLen {
		out = append(out, int64(t.pad))
	}
	return out
}

// appendTokens appends the ids of text's tokens to out, stopping once out holds
// limit ids when limit >= 0.
func (t *Tokenizer) appendTokens(out []int64, text string, limit int) []int64 {
	clean := cleanText(text)
	for _, loc := range pieceRE.FindAllStringIndex(clean, -1) {
		if limit >= 0 && len(out) >= limit {
			break
		}
		for _, id := range t.pieceIDs(clean[loc[0]:loc[1]]) {
			out = append(out, int64(id))
		}
	}
	return out
}

// pieceIDs returns the ids of one pre-tokenised piece, from the cache when seen.
func (t *Tokenizer) pieceIDs(piece string) []int32 {
	switch piece {
	case startToken:
		return []int32{t.bos}
	case endToken:
		return []int32{t.eos}
	}
	if ids, ok := t.cache.get(piece); ok {
		return ids
	}
	ids := t.bpe(piece)
	t.cache.put(strings.Clone(piece), ids)
	return ids
}

// PadID is the id EncodePadded pads with.
func (t *Tokenizer) PadID() int64 { return int64(t.pad) }

// MaxLength is model_max_length from tokenizer_config.json, default 77.
func (t *Tokenizer) MaxLength() int { return t.maxLength }

// BOS is the id of <|startoftext|> (49406 for CLIP).
func (t *Tokenizer) BOS() int64 { return int64(t.bos) }

// EOS is the id of <|endoftext|> (49407 for CLIP).
func (t *Tokenizer) EOS() int64 { return int64(t.eos) }

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Decode turns ids back into text: start and end tokens are dropped, every
// word-end suffix becomes a space and the byte symbols become UTF-8 again
// (invalid sequences become U+FFFD). Pieces come back separated by spaces, so
// Decode(Encode(s)) is the cleaned, lower-cased s when its pieces were space
// separated. An id outside the vocabulary is an error.
func (t *Tokenizer) Decode(ids []int64) (string, error) {
	var raw []byte
	for _, id := range ids {
		if id < 0 || id >= int64(len(t.tokens)) || t.tokens[id] == "" {
			return "", fmt.Errorf("clip: decode: id %d is not in the vocabulary", id)
		}
		if id == int64(t.bos) || id == int64(t.eos) {
			continue
		}
		tok, isEnd := strings.CutSuffix(t.tokens[id], wordEnd)
		raw = appendSymbolBytes(raw, tok)
		if isEnd {
			raw = append(raw, ' ')
		}
	}
	return strings.TrimSuffix(strings.ToValidUTF8(string(raw), string(utf8.RuneError)), " "), nil
}

// appendSymbolBytes maps byte symbols back to bytes; runes outside the table
// (not produced by this tokenizer's vocabulary) are kept as UTF-8.
func appendSymbolBytes(dst []byte, tok string) []byte {
	for _, r := range tok {
		if b, ok := symbolBytes[r]; ok {
			dst = append(dst, b)
			continue
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// symbolBytes inverts byteSymbols.
var symbolBytes = func() map[rune]byte {
	m := make(map[rune]byte, len(byteSymbols))
	for b, r := range byteSymbols {
		m[r] = byte(b)
	}
	return m
}()
