package clip

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Special token strings of the CLIP vocabulary.
const (
	startToken = "<|startoftext|>"
	endToken   = "<|endoftext|>"
	// wordEnd is the suffix BPE puts on the last symbol of every piece.
	wordEnd = "</w>"
)

// pieceRE is CLIP's pre-tokenisation pattern as Python's regex module runs it
// with IGNORECASE:
//   - the literal alternatives match case-insensitively, so "'ſ" (long s)
//     is a contraction piece; Go's (?i) folds the same way;
//   - U+0345 (combining ypogegrammeni) case-folds to a letter, so the negated
//     class rejects it while [\p{L}] does not take it: no alternative matches
//     it and it is dropped; it is left out of the last class explicitly.
//
// Go's \s is ASCII only, but after cleanText the only white space left is the
// plain space, so it agrees with Python's.
var pieceRE = regexp.MustCompile(`(?i:<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d)` +
	`|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}\x{345}]+`)

// Characters with a special lower-case mapping in Python's str.lower.
const (
	capitalDottedI = '\u0130' // lower-cases to "i" + U+0307 (full mapping)
	capitalSigma   = '\u03a3'
	smallSigma     = '\u03c3'
	finalSigma     = '\u03c2'
)

// cleanText normalises text as CLIP's basic_clean and whitespace_clean do (without
// ftfy), then lower-cases it as Python's str.lower does.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	s = unescapeHTML(unescapeHTML(s))
	s = strings.TrimFunc(s, isStripSpace)
	s = collapseSpace(s)
	s = strings.TrimFunc(s, isStripSpace)
	return lowerPython(s)
}

// isStripSpace reports whether Python's str.strip removes r: Unicode White_Space
// plus the information separators U+001C..U+001F.
func isStripSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// collapseSpace replaces every run of Unicode White_Space (the regex module's \s)
// by one ASCII space.
func collapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inSpace := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !inSpace {
				b.WriteByte(' ')
			}
			inSpace = true
			continue
		}
		inSpace = false
		b.WriteRune(r)
	}
	return b.String()
}

// lowerPython lower-cases s like Python's str.lower: simple mappings, the full
// mapping of U+0130 and the Final_Sigma context for U+03A3.
func lowerPython(s string) string {
	if !strings.ContainsRune(s, capitalDottedI) && !strings.ContainsRune(s, capitalSigma) {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 2)
	for i, r := range rs {
		switch r {
		case capitalDottedI:
			b.WriteString("i\u0307")
		case capitalSigma:
			if isFinalSigma(rs, i) {
				b.WriteRune(finalSigma)
			} else {
				b.WriteRune(smallSigma)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// isFinalSigma reports whether rs[i] is in the Final_Sigma context:
// a cased letter before it and none after it, skipping case-ignorable characters.
func isFinalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && isCaseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !isCased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && isCaseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !isCased(rs[j])
}

// isCased is Unicode's Cased property: Lowercase, Uppercase or titlecase letter.
func isCased(r rune) bool {
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// wordBreakIgnorable holds the Word_Break MidLetter, MidNumLet and Single_Quote
// characters, which are case-ignorable.
var wordBreakIgnorable = map[rune]bool{
	'\'': true, '.': true, ':': true, '\u00b7': true, '\u0387': true, '\u055f': true,
	'\u05f4': true, '\u2018': true, '\u2019': true, '\u2024': true, '\u2027': true,
	'\ufe13': true, '\ufe52': true, '\ufe55': true, '\uff07': true, '\uff0e': true,
	'\uff1a': true,
}

// isCaseIgnorable is Unicode's Case_Ignorable property.
func isCaseIgnorable(r rune) bool {
	return wordBreakIgnorable[r] || unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
