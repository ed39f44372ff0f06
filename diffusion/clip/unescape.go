package clip

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// charRefRE is the pattern of Python's html.unescape: a numeric reference or up
// to 32 name characters, each with an optional ';'.
var charRefRE = regexp.MustCompile(`&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)`)

// Limits of numeric character references.
const (
	maxCodePoint  = 0x10ffff
	maxRefDigits  = 8 // more digits (decimal or hex) are always above maxCodePoint
	cp1252First   = 0x80
	minPrefixName = 2 // shortest entity name the prefix search tries
)

// cp1252 maps the references &#x80; .. &#x9f; as HTML5 (and Python) do.
var cp1252 = [32]rune{
	'\u20ac', '\u0081', '\u201a', '\u0192', '\u201e', '\u2026', '\u2020', '\u2021',
	'\u02c6', '\u2030', '\u0160', '\u2039', '\u0152', '\u008d', '\u017d', '\u008f',
	'\u0090', '\u2018', '\u2019', '\u201c', '\u201d', '\u2022', '\u2013', '\u2014',
	'\u02dc', '\u2122', '\u0161', '\u203a', '\u0153', '\u009d', '\u017e', '\u0178',
}

// legacyEntities are the HTML5 entity names also valid without ';'.
var legacyEntities = func() map[string]bool {
	names := strings.Fields(`AElig AMP Aacute Acirc Agrave Aring Atilde Auml COPY Ccedil ETH
		Eacute Ecirc Egrave Euml GT Iacute Icirc Igrave Iuml LT Ntilde Oacute Ocirc Ograve
		Oslash Otilde Ouml QUOT REG THORN Uacute Ucirc Ugrave Uuml Yacute aacute acirc acute
		aelig agrave amp aring atilde auml brvbar ccedil cedil cent copy curren deg divide
		eacute ecirc egrave eth euml frac12 frac14 frac34 gt iacute icirc iexcl igrave iquest
		iuml laquo lt macr micro middot nbsp not ntilde oacute ocirc ograve ordf ordm oslash
		otilde ouml para plusmn pound quot raquo reg sect shy sup1 sup2 sup3 szlig thorn times
		uacute ucirc ugrave uml uuml yacute yen yuml`)
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}()

// missingEntities are HTML5 entities absent from Go's html package table.
var missingEntities = map[string]string{
	"nGt;": "\u226b\u20d2",
	"nLt;": "\u226a\u20d2",
}

// unescapeHTML is Python's html.unescape. Go's html.UnescapeString differs on
// malformed references ("&#x;"), forbidden code points and the name search, so
// only its entity table is used.
func unescapeHTML(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return charRefRE.ReplaceAllStringFunc(s, replaceCharRef)
}

// replaceCharRef replaces one match of charRefRE ("&" included).
func replaceCharRef(m string) string {
	ref := m[1:]
	if ref[0] == '#' {
		return numericRef(ref[1:])
	}
	if v, ok := entityValue(ref); ok {
		return v
	}
	runes := []rune(ref)
	for x := len(runes) - 1; x >= minPrefixName; x-- {
		if name := string(runes[:x]); legacyEntities[name] {
			v, _ := entityValue(name)
			return v + string(runes[x:])
		}
	}
	return m
}

// numericRef decodes the part after "&#": decimal digits or x and hex digits,
// with an optional ';', as Python's _replace_charref does.
func numericRef(ref string) string {
	ref = strings.TrimSuffix(ref, ";")
	base := 10
	if ref[0] == 'x' || ref[0] == 'X' {
		ref, base = ref[1:], 16
	}
	digits := strings.TrimLeft(ref, "0")
	n := uint64(maxCodePoint + 1)
	if len(digits) <= maxRefDigits {
		n, _ = strconv.ParseUint("0"+digits, base, 64)
	}
	switch {
	case n == 0:
		return string(utf8.RuneError)
	case n == '\r':
		return "\r"
	case n >= cp1252First && n < cp1252First+uint64(len(cp1252)):
		return string(cp1252[n-cp1252First])
	case n > maxCodePoint || (n >= 0xd800 && n <= 0xdfff):
		return string(utf8.RuneError)
	case isForbiddenCodePoint(rune(n)):
		return ""
	}
	return string(rune(n))
}

// isForbiddenCodePoint lists the code points Python's html.unescape drops:
// C0 controls other than tab, LF, FF, CR and space, DEL and C1, and non-characters.
func isForbiddenCodePoint(r rune) bool {
	return (r >= 0x01 && r <= 0x08) || r == 0x0b || (r >= 0x0e && r <= 0x1f) ||
		(r >= 0x7f && r <= 0x9f) || (r >= 0xfdd0 && r <= 0xfdef) || r&0xfffe == 0xfffe
}

// entityValue looks a name up in the HTML5 entity table: names ending in ';'
// in the full table, others among the legacy names. Go's table is reached
// through html.UnescapeString on the well-formed reference "&name;", which
// decodes as a whole only when the name is in the table.
func entityValue(name string) (string, bool) {
	if v, ok := missingEntities[name]; ok {
		return v, true
	}
	base, semi := strings.CutSuffix(name, ";")
	if !semi && !legacyEntities[base] {
		return "", false
	}
	if !isASCIIAlnum(base) {
		return "", false
	}
	ref := "&" + base + ";"
	v := html.UnescapeString(ref)
	// Not in the table: unchanged, or a legacy prefix decoded with the rest
	// of the name and its ';' left over. The only entity whose value ends in
	// ';' is &semi;.
	if v == ref || (strings.HasSuffix(v, ";") && v != ";") {
		return "", false
	}
	return v, true
}

// isASCIIAlnum reports whether s is non-empty and only ASCII letters and digits,
// the characters of entity names.
func isASCIIAlnum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
