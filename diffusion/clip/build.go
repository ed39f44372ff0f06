package clip

// build validates a vocabulary and merge list and assembles a Tokenizer. Every
// byte symbol (with and without "</w>"), both special tokens, the pad token and
// every merge's parts and result must be in the vocabulary, so Encode can never
// meet an unknown symbol.
func build(ids map[string]int32, merges []merge, pad string, maxLength int, src source) (*Tokenizer, error) {
	t := &Tokenizer{ids: ids, maxLength: maxLength}
	var err error
	if t.tokens, err = tokenTable(ids, src.vocabPath); err != nil {
		return nil, err
	}
	if err = t.setByteIDs(src.vocabPath); err != nil {
		return nil, err
	}
	if t.bos, err = lookup(ids, startToken, src.vocabPath); err != nil {
		return nil, err
	}
	if t.eos, err = lookup(ids, endToken, src.vocabPath); err != nil {
		return nil, err
	}
	if t.pad, err = t.padID(pad, src); err != nil {
		return nil, err
	}
	if t.merges, err = mergeRules(ids, merges, src.mergesPath); err != nil {
		return nil, err
	}
	return t, nil
}

// tokenTable inverts the vocabulary; two tokens sharing an id is an error.
func tokenTable(ids map[string]int32, path string) ([]string, error) {
	size := int32(0)
	for _, id := range ids {
		size = max(size, id+1)
	}
	tokens := make([]string, size)
	for tok, id := range ids {
		if tok == "" {
			return nil, fileErr(path, 0, "empty token string (id %d)", id)
		}
		if prev := tokens[id]; prev != "" {
			a, b := min(prev, tok), max(prev, tok)
			return nil, fileErr(path, 0, "tokens %q and %q share id %d", a, b, id)
		}
		tokens[id] = tok
	}
	return tokens, nil
}

// setByteIDs looks up the 512 byte symbols.
func (t *Tokenizer) setByteIDs(path string) error {
	for b, r := range byteSymbols {
		id, err := lookup(t.ids, string(r), path)
		if err != nil {
			return err
		}
		endID, err := lookup(t.ids, string(r)+wordEnd, path)
		if err != nil {
			return err
		}
		t.byteIDs[b], t.byteEndIDs[b] = id, endID
	}
	return nil
}

// padID resolves the pad token; an empty pad token means the end token.
func (t *Tokenizer) padID(pad string, src source) (int32, error) {
	if pad == "" {
		return t.eos, nil
	}
	id, ok := t.ids[pad]
	if !ok {
		return 0, fileErr(src.padPath, 0, "pad_token %q is not in %s", pad, src.vocabPath)
	}
	return id, nil
}

// lookup returns a token's id or an error naming the vocabulary file.
func lookup(ids map[string]int32, tok, path string) (int32, error) {
	id, ok := ids[tok]
	if !ok {
		return 0, fileErr(path, 0, "missing %q", tok)
	}
	return id, nil
}

// mergeRules turns merge lines into rules keyed by the pair's ids. A repeated
// pair keeps its last rank, like the reference's dict(zip(merges, range(...))).
func mergeRules(ids map[string]int32, merges []merge, path string) (map[uint64]mergeRule, error) {
	rules := make(map[uint64]mergeRule, len(merges))
	for rank, m := range merges {
		left, okL := ids[m.left]
		right, okR := ids[m.right]
		joined, okJ := ids[m.left+m.right]
		switch {
		case !okL:
			return nil, fileErr(path, m.line, "merge symbol %q is not in the vocabulary", m.left)
		case !okR:
			return nil, fileErr(path, m.line, "merge symbol %q is not in the vocabulary", m.right)
		case !okJ:
			return nil, fileErr(path, m.line, "merge result %q is not in the vocabulary", m.left+m.right)
		}
		rules[pairKey(left, right)] = mergeRule{rank: int32(rank), id: joined}
	}
	return rules, nil
}
