package clip

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// mergesVersionLine is the header Hugging Face writes on merges.txt.
const mergesVersionLine = "#version: 0.2"

// WriteHF writes vocab.json, merges.txt, tokenizer_config.json and
// special_tokens_map.json for this tokenizer into dir (created if needed), in the
// Hugging Face CLIPTokenizer layout. padToken is the pad token string; it must be
// in the vocabulary ("" means the end token). Load(dir) gives back an equivalent
// tokenizer with that pad token.
func (t *Tokenizer) WriteHF(dir string, padToken string) error {
	if padToken == "" {
		padToken = endToken
	}
	if _, ok := t.ids[padToken]; !ok {
		return fmt.Errorf("clip: write %s: pad token %q is not in the vocabulary", dir, padToken)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("clip: write %s: %w", dir, err)
	}
	files := []struct {
		name string
		data func() ([]byte, error)
	}{
		{VocabFile, t.vocabJSON},
		{MergesFile, t.mergesText},
		{ConfigFile, func() ([]byte, error) { return t.configJSON(padToken) }},
		{SpecialTokensFile, func() ([]byte, error) { return specialTokensJSON(padToken) }},
	}
	for _, f := range files {
		data, err := f.data()
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f.name), data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("clip: write %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

// vocabJSON renders the vocabulary as a JSON object in id order, one entry a line.
func (t *Tokenizer) vocabJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("{")
	first := true
	for id, tok := range t.tokens {
		if tok == "" {
			continue
		}
		key, err := jsonString(tok)
		if err != nil {
			return nil, err
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&buf, "\n  %s: %d", key, id)
	}
	buf.WriteString("\n}\n")
	return buf.Bytes(), nil
}

// jsonString quotes s as JSON without escaping <, > and &.
func jsonString(s string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// mergesText renders merges.txt: the version header, then the merges by rank.
func (t *Tokenizer) mergesText() ([]byte, error) {
	type ranked struct {
		rank        int32
		left, right int32
	}
	list := make([]ranked, 0, len(t.merges))
	for key, rule := range t.merges {
		list = append(list, ranked{rank: rule.rank, left: int32(key >> 32), right: int32(uint32(key))})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].rank < list[j].rank })
	var buf bytes.Buffer
	buf.WriteString(mergesVersionLine + "\n")
	for _, m := range list {
		fmt.Fprintf(&buf, "%s %s\n", t.tokens[m.left], t.tokens[m.right])
	}
	return buf.Bytes(), nil
}

// configJSON renders tokenizer_config.json.
func (t *Tokenizer) configJSON(padToken string) ([]byte, error) {
	cfg := struct {
		AddPrefixSpace bool   `json:"add_prefix_space"`
		BOSToken       string `json:"bos_token"`
		DoLowerCase    bool   `json:"do_lower_case"`
		EOSToken       string `json:"eos_token"`
		Errors         string `json:"errors"`
		ModelMaxLength int    `json:"model_max_length"`
		PadToken       string `json:"pad_token"`
		TokenizerClass string `json:"tokenizer_class"`
		UnkToken       string `json:"unk_token"`
	}{
		BOSToken: startToken, DoLowerCase: true, EOSToken: endToken, Errors: "replace",
		ModelMaxLength: t.maxLength, PadToken: padToken, TokenizerClass: "CLIPTokenizer",
		UnkToken: endToken,
	}
	return indentJSON(cfg)
}

// specialTokensJSON renders special_tokens_map.json.
func specialTokensJSON(padToken string) ([]byte, error) {
	return indentJSON(map[string]string{
		"bos_token": startToken, "eos_token": endToken,
		"pad_token": padToken, "unk_token": endToken,
	})
}

// indentJSON renders v as indented JSON without escaping <, > and &.
func indentJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
