package rdb

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// A record written as Submit writes it reads back field for field; an
// empty hash is ErrNoRecord; a bad created_at or output is an error.
func TestParseRecord(t *testing.T) {
	created := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	j := NewJob{ID: "id-1", Model: "tryon", Owner: "o", Status: "starting", Created: created, Cost: 3,
		Inputs: []byte(`{"a":1}`), Webhook: "https://h.test", ExpiresAt: created.Add(time.Hour), InputBytes: 7}
	f := j.fields()
	m := map[string]string{}
	for i := 0; i < len(f); i += 2 {
		m[f[i].(string)] = toString(f[i+1])
	}
	m[FieldOutput], m[FieldRefunded], m[FieldIdem], m[FieldAttempt] = `["a","b"]`, "1", "k", "2"
	r, err := parseRecord(m)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "id-1" || r.Model != "tryon" || r.Owner != "o" || !r.CreatedAt.Equal(created) || r.Cost != 3 ||
		string(r.Inputs) != `{"a":1}` || r.Webhook != "https://h.test" || !r.ExpiresAt.Equal(created.Add(time.Hour)) ||
		len(r.Output) != 2 || !r.Refunded || r.IdemKey != "k" || r.Attempt != 2 || r.UpdatedAt == nil {
		t.Errorf("parsed %+v", r)
	}
	if _, err := parseRecord(map[string]string{}); !errors.Is(err, ErrNoRecord) {
		t.Errorf("empty hash: %v", err)
	}
	for field, bad := range map[string]string{FieldCreated: "yesterday", FieldOutput: "[1"} {
		m2 := map[string]string{FieldID: "x", FieldCreated: created.Format(timeLayout)}
		m2[field] = bad
		if _, err := parseRecord(m2); err == nil {
			t.Errorf("%s=%q parsed", field, bad)
		}
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return itoa(int64(x))
	case int64:
		return itoa(x)
	}
	return ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// FuzzParseRecord: any hash is a record or an error, never a panic.
func FuzzParseRecord(f *testing.F) {
	f.Add("id", "2026-11-27T08:00:00Z", `["a"]`, "3", "1764230400000")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, id, created, output, cost, expires string) {
		r, err := parseRecord(map[string]string{FieldID: id, FieldCreated: created, FieldOutput: output, FieldCost: cost, FieldExpires: expires})
		if err == nil && r.ID != id {
			t.Fatalf("id %q became %q", id, r.ID)
		}
	})
}
