package clip

import (
	"sync"
)

// byteSymbols is GPT-2's bytes_to_unicode table: printable bytes map to
// themselves, the others to U+0100 upwards in byte order.
var byteSymbols = buildByteSymbols()

func buildByteSymbols() [256]rune {
	var table [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		if isPrintableByte(b) {
			table[b] = rune(b)
			continue
		}
		table[b] = next
		next++
	}
	return table
}

// isPrintableByte reports whether bytes_to_unicode keeps b as itself:
// '!'..'~', '¡'..'¬' and '®'..'ÿ'.
func isPrintableByte(b int) bool {
	return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
}

// byteOrder lists the bytes in the order bytes_to_unicode enumerates them, which
// is the order of the first 256 vocabulary entries.
func byteOrder() []byte {
	order := make([]byte, 0, 256)
	for b := 0; b < 256; b++ {
		if isPrintableByte(b) {
			order = append(order, byte(b))
		}
	}
	for b := 0; b < 256; b++ {
		if !isPrintableByte(b) {
			order = append(order, byte(b))
		}
	}
	return order
}

// pairKey packs two symbol ids into one map key.
func pairKey(left, right int32) uint64 {
	return uint64(uint32(left))<<32 | uint64(uint32(right))
}

// mergeRule is one line of merges.txt: its rank and the id of the joined symbol.
type mergeRule struct {
	rank int32
	id   int32
}

// bpe returns the vocabulary ids of one pre-tokenised piece (raw UTF-8 bytes).
func (t *Tokenizer) bpe(piece string) []int32 {
	syms := make([]int32, len(piece))
	for i := 0; i < len(piece); i++ {
		syms[i] = t.byteIDs[piece[i]]
	}
	syms[len(syms)-1] = t.byteEndIDs[piece[len(piece)-1]]
	for len(syms) > 1 {
		rule, found := t.bestMerge(syms)
		if !found {
			break
		}
		syms = applyMerge(syms, rule)
	}
	return syms
}

// bestMerge finds the adjacent pair with the lowest merge rank; false when no
// adjacent pair has a rule.
func (t *Tokenizer) bestMerge(syms []int32) (rankedPair, bool) {
	best := rankedPair{rule: mergeRule{rank: -1}}
	for i := 0; i+1 < len(syms); i++ {
		rule, ok := t.merges[pairKey(syms[i], syms[i+1])]
		if ok && (best.rule.rank < 0 || rule.rank < best.rule.rank) {
			best = rankedPair{left: syms[i], right: syms[i+1], rule: rule}
		}
	}
	return best, best.rule.rank >= 0
}

// rankedPair is a mergeable pair of adjacent symbols with its rule.
type rankedPair struct {
	left, right int32
	rule        mergeRule
}

// applyMerge joins every occurrence of the pair, scanning left to right as the
// reference does (so "a a a" with rule "a a" gives "aa a"). It works in place.
func applyMerge(syms []int32, p rankedPair) []int32 {
	out := 0
	for i := 0; i < len(syms); out++ {
		if i+1 < len(syms) && syms[i] == p.left && syms[i+1] == p.right {
			syms[out] = p.rule.id
			i += 2
			continue
		}
		syms[out] = syms[i]
		i++
	}
	return syms[:out]
}

// cacheLimit bounds the number of cached pieces; the cache is emptied when full,
// so memory stays bounded however many distinct prompts are encoded.
const cacheLimit = 1 << 14

// pieceCache maps pre-tokenised pieces to their ids; safe for concurrent use.
// Cached slices are never modified.
type pieceCache struct {
	mu     sync.RWMutex
	pieces map[string][]int32
}

func (c *pieceCache) get(piece string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.pieces[piece]
	c.mu.RUnlock()
	return ids, ok
}

func (c *pieceCache) put(piece string, ids []int32) {
	c.mu.Lock()
	if c.pieces == nil || len(c.pieces) >= cacheLimit {
		c.pieces = make(map[string][]int32)
	}
	c.pieces[piece] = ids
	c.mu.Unlock()
}
