// Package clip is a pure-Go implementation of the CLIP text tokenizer: OpenAI's
// simple_tokenizer.py as shipped with CLIP, which Hugging Face's CLIPTokenizer and
// the Stable Diffusion ONNX exports (tokenizer/ folder of the Optimum layout) use.
//
// # Algorithm
//
// Encoding a prompt takes these steps, in the order of the reference code:
//
//  1. Clean-up: HTML references are unescaped twice with Python's html.unescape
//     rules (reimplemented: Go's html.UnescapeString differs on malformed and
//     forbidden references), the text is stripped, every run of Unicode white
//     space becomes one space, the text is stripped again and lower-cased with
//     Python's str.lower rules (full mapping of U+0130 and the Greek final-sigma
//     context, which Go's strings.ToLower does not apply). Invalid UTF-8 is first
//     replaced by U+FFFD.
//  2. Pre-tokenisation with the CLIP pattern
//     <\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
//     so letters group into words, every digit stands alone and punctuation runs
//     group together; white space is dropped. The reference compiles it with
//     IGNORECASE, which is reproduced where it matters: the literal alternatives
//     fold case ("'ſ" with a long s is a contraction piece) and U+0345 matches
//     no alternative, so it is dropped. The two special tokens written in the text
//     become their ids.
//  3. Each piece's UTF-8 bytes are mapped to printable symbols with GPT-2's
//     bytes_to_unicode table, the last symbol gets the word-end suffix "</w>".
//  4. Byte-pair encoding: the adjacent pair with the lowest merge rank (its line in
//     merges.txt) is merged everywhere, left to right, until no ranked pair is left.
//     Symbols are handled as vocabulary ids, and each merge rule stores the id of its
//     result, so the loop does no string work. Results per piece are cached (bounded,
//     safe for concurrent use).
//  5. The ids are framed by <|startoftext|> (49406) and <|endoftext|> (49407);
//     EncodePadded truncates keeping the end token last and pads with the pad token.
//
// A Tokenizer comes from a Hugging Face folder (Load: vocab.json, merges.txt,
// tokenizer_config.json, special_tokens_map.json) or from OpenAI's
// bpe_simple_vocab_16e6.txt.gz (FromBPE), whose vocabulary is derived as the
// reference does: 256 byte symbols, the same with "</w>", one entry per merge of
// lines 1..48894, then the two special tokens. Both sources validate that every
// byte symbol, both special tokens, every merge part and every merge result are in
// the vocabulary, so encoding can never meet an unknown symbol.
//
// # Not replicated
//
// The reference runs ftfy.fix_text first (mojibake repair, NFC normalisation,
// curly-quote and ligature fixes, control-character removal). ftfy has no Go
// port and is not reproduced: text that ftfy would change (mojibake such as
// "cafÃ©", decomposed accents, the "ﬁ" ligature, curly apostrophes in "it’s")
// may tokenise differently from Python with ftfy installed; it matches Python
// without ftfy. Unicode tables are Go's (Unicode 15): letters and digits added
// in later versions, which a newer Python regex module knows, count as
// punctuation here. Hugging Face's slow CLIPTokenizer without ftfy falls back to
// a BERT basic tokenizer instead; this package follows OpenAI's code, which the
// fast tokenizer also matches for ordinary text. testdata/reference_tokenizer.py
// is OpenAI's code with ftfy left out, used to produce testdata/reference.jsonl.
package clip
