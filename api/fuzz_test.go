package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"fashiond/fetch"
	"fashiond/jobs"
	"fashiond/spec"
)

// FuzzValidate sends random bodies through the whole handler and random
// inputs through Validate: never a panic, never a 5xx, always a JSON body;
// accepted inputs normalise to valid JSON whose cost Cost reproduces.
func FuzzValidate(f *testing.F) {
	for _, m := range spec.ModelNames {
		f.Add(m, minimalInputs[m])
	}
	for _, tc := range validateCases {
		f.Add(tc.model, tc.inputs)
	}
	f.Add("tryon", `{"personImage":"data:image/png;base64,`+strings.Repeat("A", 64)+`","garmentImage":"http://[::1]:80/"}`)
	f.Add("pose-control", `{"modelImage":"x","poses":[{"type":"template","cdnUrl":{"a":1}}]}`)
	f.Add("angle-generation", `{"imageUrl":"`+img+`","angleIds":["front",null]}`)
	f.Add("", `{"model_name":"tryon","inputs":`)
	fake := newFake()
	h := New(Options{Backend: fake})
	f.Fuzz(func(t *testing.T, model, inputs string) {
		typed, cost, verr := Validate(model, json.RawMessage(inputs))
		if verr == nil {
			norm, err := spec.Encode(typed)
			if err != nil || !json.Valid(norm) || cost < 1 || typed.ModelName() != model {
				t.Fatalf("accepted %s %s: normalised %s (%v) cost %d", model, inputs, norm, err, cost)
			}
			if c, err := spec.Cost(typed); err != nil || c != cost {
				t.Fatalf("Cost(normalised) = %d, %v; Validate said %d", c, err, cost)
			}
			// Normalising is idempotent.
			typed2, cost2, verr2 := Validate(model, norm)
			again, _ := spec.Encode(typed2)
			if verr2 != nil || !bytes.Equal(again, norm) || cost2 != cost {
				t.Fatalf("not idempotent: %s -> %s (%v)", norm, again, verr2)
			}
		} else if verr.Code == "" || verr.Msg == "" {
			t.Fatalf("empty error %+v", verr)
		}

		for _, body := range []string{
			`{"model_name":` + quoteJSON(model) + `,"inputs":` + inputs + `}`,
			inputs,
		} {
			r := httptest.NewRequest("POST", "/v1/run", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer "+keyAlice)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code >= 500 {
				t.Fatalf("%d for %q: %s", w.Code, body, w.Body)
			}
			var e map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatalf("%d body not JSON: %s", w.Code, w.Body)
			}
			if w.Code >= 400 && (e["code"] == "" || e["error"] == "") {
				t.Fatalf("%d error without code: %s", w.Code, w.Body)
			}
		}
		fake.mu.Lock()
		fake.balance["owner-alice"] = 1000
		fake.jobs = map[string]*jobs.Job{}
		fake.submitted = nil
		fake.mu.Unlock()
	})
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// FuzzRunBody posts arbitrary bodies to POST /v1/run: every answer is JSON
// and a 2xx or 4xx (never a 5xx or a panic), and an accepted body is one
// JSON object without duplicate member names or invalid UTF-8.
func FuzzRunBody(f *testing.F) {
	f.Add([]byte(runBody("tryon", minimalInputs["tryon"])))
	f.Add([]byte(`{"model_name":"nope","model_name":"model-create","inputs":{"type":"generate","name":"a","prompt":"b"}}`))
	f.Add([]byte("{\"model_name\":\"prompt-tryon\",\"inputs\":{\"personImage\":\"" + img + "\",\"prompt\":\"\xff\"}}"))
	f.Add([]byte(`{"model_name":"tryon","inputs":{"personImage":"data:image/svg+xml;base64,PHN2Zy8+","garmentImage":"x"}}`))
	f.Add([]byte(`{"a":"` + strings.Repeat("x", 3000) + `"}`))
	f.Add([]byte(`{"a":"\"\\` + strings.Repeat("\\\\", 900) + `"}`))
	h := New(Options{Backend: newFake(), FetchPolicy: fetch.Policy{MaxBytes: 1024}})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := postRecorded(h, body)
		if w.Code >= 500 {
			t.Fatalf("%d for %q: %s", w.Code, body, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", w.Body)
		}
		if w.Code < 300 {
			if err := strictJSON("", body); err != nil {
				t.Fatalf("accepted %q although %v", body, err)
			}
		}
	})
}
