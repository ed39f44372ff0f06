package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"fashiond/internal/pipelinetest"
	"fashiond/internal/testenv"
)

// The playground page driven in headless Chromium (Debian's chromium, which
// `make setup` installs through scripts/setup-chromium.sh) against a real
// `fashiond serve` with real models: a try-on submitted through the page
// reaches succeeded and shows its image and notes; a validation error is
// shown with its field; every model's generated form has the fields,
// defaults and limits of /openapi.json.

// chromiumPath is the browser the test drives.
const chromiumPath = "/usr/bin/chromium"

// Time limits of the browser test.
const (
	browserStepTimeout = 30 * time.Second
	browserJobTimeout  = 3 * time.Minute
	browserPollEvery   = 200 * time.Millisecond
	// playgroundCredits is the test key's balance.
	playgroundCredits = 20
)

// startPlaygroundServe starts `fashiond serve` as TestServeEndToEnd does.
func startPlaygroundServe(t *testing.T) *server {
	t.Helper()
	root := pipelinetest.Root()
	data := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "data", "presets"), filepath.Join(data, "presets")); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	s := &server{t: t, bin: buildBinary(t), base: "http://" + addr}
	s.env = append(os.Environ(),
		"FASHIOND_DATA_DIR="+data, "FASHIOND_ADDR="+addr, fmt.Sprintf("FASHIOND_API_KEYS=%s:%d", testKey, playgroundCredits),
		"FASHIOND_MODELS_DIR="+testenv.ModelsDir(), "FASHIOND_ORT_LIB="+testenv.ORTLib(),
		"FASHIOND_LOG_LEVEL=warn", "FASHIOND_REDIS_URL=")
	s.start()
	t.Cleanup(s.stop)
	return s
}

// newBrowser starts headless Chromium with a fresh profile; the page's
// uncaught exceptions and Content-Security-Policy refusals are collected
// into *problems.
func newBrowser(t *testing.T, problems *[]string, mu *sync.Mutex) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// Registered after the profile's TempDir: the browser exits first.
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
				mu.Lock()
				*problems = append(*problems, m.Text)
				mu.Unlock()
			}
		}
	}()
	return ctx
}

// do runs browser steps with the step timeout.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshot saves the whole page under FASHIOND_TEST_OUT (if set).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	path := testenv.OutPath(t, name)
	if path == "" {
		return
	}
	c, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// setValue sets the value of the element sel as a user would: the value,
// then its input and change events.
func setValue(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q;
  e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return e.value; })()`, sel, value)
	if got := eval[string](t, ctx, "set "+sel, js); got != value {
		t.Fatalf("%s: value %q, want %q", sel, got, value)
	}
}

// openPage loads the playground, gives it the key and picks model.
func openPage(t *testing.T, ctx context.Context, base, model string) {
	t.Helper()
	do(t, ctx, "open the page",
		chromedp.Navigate(base+"/"),
		chromedp.WaitEnabled(chromedp.CSS("#model")),
	)
	setValue(t, ctx, "#api-key", "")
	do(t, ctx, "paste the key",
		chromedp.SendKeys(chromedp.CSS("#api-key"), testKey),
		chromedp.Click(chromedp.CSS("#key-check")),
		chromedp.WaitVisible(chromedp.CSS("#key-status.ok")),
	)
	setValue(t, ctx, "#model", model)
	do(t, ctx, "the form of "+model, chromedp.WaitReady(chromedp.CSS(`#fields .field`)))
}

func TestPlaygroundInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test of the binary in a browser")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s is missing: run `make setup` (scripts/setup-chromium.sh installs Debian's chromium)", chromiumPath)
	}
	s := startPlaygroundServe(t)
	var mu sync.Mutex
	var problems []string
	ctx := newBrowser(t, &problems, &mu)

	t.Run("tryon", func(t *testing.T) { playgroundTryon(t, ctx, s) })
	t.Run("validation error", func(t *testing.T) { playgroundValidation(t, ctx, s) })
	t.Run("forms", func(t *testing.T) { playgroundForms(t, ctx, s) })
	t.Run("cancel", func(t *testing.T) { playgroundCancel(t, ctx, s) })

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page threw or was refused something: %q", problems)
	}
}

// shownOutput is what the page shows of one output.
type shownOutput struct {
	Status, JobID, Transport string
	Width, Height            int
	Path, Method             string
	Notes                    []string
	Checks                   int
}

const readOutputJS = `(() => {
  const img = document.querySelector('#outputs img.media');
  return {
    Status: document.getElementById('job-status').textContent,
    JobID: document.getElementById('job-id').textContent,
    Transport: document.getElementById('job').dataset.transport || '',
    Width: img && img.complete ? img.naturalWidth : 0,
    Height: img && img.complete ? img.naturalHeight : 0,
    Path: (document.querySelector('#outputs .info .path') || {}).textContent || '',
    Method: ((document.querySelector('#outputs .info > div') || {}).textContent || '').replace(/^\S+\s*/, ''),
    Notes: [...document.querySelectorAll('#outputs .notes li')].map((li) => li.textContent),
    Checks: document.querySelectorAll('#outputs .checks tbody tr').length,
  };
})()`

// playgroundTryon uploads the person and the garment, runs the try-on and
// compares what the page shows with the job the API reports.
func playgroundTryon(t *testing.T, ctx context.Context, s *server) {
	openPage(t, ctx, s.base, "tryon")
	person := filepath.Join(testenv.Testdata(), "images", "fashn_model.webp")
	garment := filepath.Join(testenv.Testdata(), "garments", "flatlay_tee_red.png")
	do(t, ctx, "upload and submit",
		chromedp.SetUploadFiles(chromedp.CSS(`[data-key="personImage"] input[type=file]`), []string{person}),
		chromedp.SetUploadFiles(chromedp.CSS(`[data-key="garmentImage"] input[type=file]`), []string{garment}),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="personImage"] img.preview`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="garmentImage"] img.preview`)),
	)
	screenshot(t, ctx, "playground-form.png")
	do(t, ctx, "submit", chromedp.Click(chromedp.CSS("#submit")), chromedp.WaitVisible(chromedp.CSS("#job-status")))
	var got shownOutput
	deadline := time.Now().Add(browserJobTimeout)
	for ; time.Now().Before(deadline); time.Sleep(browserPollEvery) {
		got = eval[shownOutput](t, ctx, "read the job", readOutputJS)
		if got.Status != "starting" && got.Status != "" && (got.Width > 0 || got.Status != "succeeded") {
			break
		}
	}
	screenshot(t, ctx, "playground-tryon.png")
	var j struct {
		Status      string   `json:"status"`
		Output      []string `json:"output"`
		OutputsInfo []struct {
			Path, Method string
			Notes        []string
			Checks       []json.RawMessage
		} `json:"outputs_info"`
	}
	s.do("GET", "/v1/status/"+got.JobID, testKey, nil, &j)
	if got.Status != "succeeded" || j.Status != "succeeded" || len(j.OutputsInfo) != 1 {
		t.Fatalf("the page shows %+v; the API says %+v\n%s", got, j, s.log)
	}
	if got.Width != 832 || got.Height != 1248 {
		t.Errorf("the result image is %dx%d in the page, want the person's 832x1248", got.Width, got.Height)
	}
	info := j.OutputsInfo[0]
	if got.Path != info.Path || got.Method != info.Method || !slices.Equal(got.Notes, info.Notes) || got.Checks != len(info.Checks) {
		t.Errorf("the page shows path %q method %q notes %q, %d checks; the API: %q %q %q, %d", got.Path, got.Method, got.Notes, got.Checks, info.Path, info.Method, info.Notes, len(info.Checks))
	}
	if len(got.Notes) == 0 || got.Checks == 0 {
		t.Errorf("no notes (%d) or no self-checks (%d) shown", len(got.Notes), got.Checks)
	}
	if got.Transport != "live" {
		t.Errorf("the job was followed by %q, want the live event stream", got.Transport)
	}
}

// playgroundValidation submits sampleCount 9: the API's 400 is shown with
// its code and field, the field is marked, and nothing is charged.
func playgroundValidation(t *testing.T, ctx context.Context, s *server) {
	var before, after struct{ Credits int64 }
	s.do("GET", "/v1/credits", testKey, nil, &before)
	openPage(t, ctx, s.base, "tryon")
	do(t, ctx, "submit an invalid request",
		chromedp.SendKeys(chromedp.CSS(`[data-key="personImage"] input.url`), "https://person.example.invalid/p.jpg"),
		chromedp.SendKeys(chromedp.CSS(`[data-key="garmentImage"] input.url`), "https://garment.example.invalid/g.png"),
	)
	setValue(t, ctx, `[data-key="sampleCount"] input`, "9")
	do(t, ctx, "submit",
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS("#error")),
	)
	box := eval[string](t, ctx, "the error box", `document.getElementById('error').textContent`)
	fieldMsg := eval[string](t, ctx, "the field's message", `document.querySelector('[data-key="sampleCount"] .field-error').textContent`)
	marked := eval[bool](t, ctx, "the field's mark", `document.querySelector('[data-key="sampleCount"]').classList.contains('invalid')`)
	screenshot(t, ctx, "playground-error.png")
	for _, want := range []string{"HTTP 400", "out_of_range", "field: inputs.sampleCount", "from 1 to 4, got 9"} {
		if !strings.Contains(box, want) {
			t.Errorf("the error box says %q, want it to contain %q", box, want)
		}
	}
	if !marked || !strings.Contains(fieldMsg, "inputs.sampleCount") {
		t.Errorf("the sampleCount field is not marked (%v) or says %q", marked, fieldMsg)
	}
	s.do("GET", "/v1/credits", testKey, nil, &after)
	if after.Credits != before.Credits {
		t.Errorf("credits went from %d to %d on a refused request", before.Credits, after.Credits)
	}
}

// formField is one top-level field of the generated form.
type formField struct {
	Key, Kind, Value, Min, Max string
	Required                   bool
}

const readFormJS = `[...document.querySelectorAll('#fields .field')]
  .filter((f) => !f.parentElement.closest('.field'))
  .map((f) => {
    const c = f.querySelector('input, select, textarea');
    let value = '';
    if (c && c.type === 'checkbox') value = String(c.checked);
    else if (c && c.tagName === 'SELECT') value = c.options[c.selectedIndex].text;
    else if (c) value = c.value;
    return {Key: f.dataset.key, Kind: c ? c.tagName.toLowerCase() + ':' + c.type : '', Value: value,
      Min: (c && c.min) || '', Max: (c && c.max) || '', Required: !!f.querySelector(':scope > label .req')};
  })`

// schemaFields is what the form of model must hold by /openapi.json: its
// inputs' properties (of the first variant, the one the page starts
// with) but those a variant does not take, and which are required.
func schemaFields(t *testing.T, doc map[string]any, model string) (keys []string, required map[string]bool) {
	t.Helper()
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	s, ok := schemas["Inputs_"+model].(map[string]any)
	if !ok {
		t.Fatalf("openapi.json has no inputs of %s", model)
	}
	if one, ok := s["oneOf"].([]any); ok {
		s = one[0].(map[string]any)
	}
	required = map[string]bool{}
	for _, r := range s["required"].([]any) {
		required[r.(string)] = true
	}
	for k, p := range s["properties"].(map[string]any) {
		enum, hasEnum := p.(map[string]any)["enum"].([]any)
		if hasEnum && !slices.ContainsFunc(enum, func(v any) bool { return v != nil && v != "" }) {
			continue // "Only with type ...": not shown for this variant
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, required
}

// playgroundForms checks every model's generated form against the
// document, and a table of concrete defaults and limits.
func playgroundForms(t *testing.T, ctx context.Context, s *server) {
	var doc map[string]any
	if code, _ := s.do("GET", "/openapi.json", "", nil, &doc); code != 200 {
		t.Fatalf("GET /openapi.json: %d", code)
	}
	shown := map[string]map[string]formField{}
	for _, m := range []string{"prompt-tryon", "pose-control", "model-create", "product-to-model", "angle-generation", "tryon", "image-to-video"} {
		openPage(t, ctx, s.base, m)
		fields := eval[[]formField](t, ctx, "read the form of "+m, readFormJS)
		byKey := map[string]formField{}
		var keys []string
		for _, f := range fields {
			byKey[f.Key] = f
			keys = append(keys, f.Key)
		}
		shown[m] = byKey
		slices.Sort(keys)
		want, required := schemaFields(t, doc, m)
		if !slices.Equal(keys, want) {
			t.Errorf("%s: the form has %v, the document %v", m, keys, want)
		}
		for _, f := range fields {
			if f.Required != required[f.Key] {
				t.Errorf("%s.%s: marked required %v, the document says %v", m, f.Key, f.Required, required[f.Key])
			}
		}
	}
	for _, tc := range []struct {
		model, key string
		want       formField
	}{
		{"tryon", "personImage", formField{Kind: "input:file", Required: true}},
		{"tryon", "accuracy", formField{Kind: "select:select-one", Value: "standard"}},
		{"tryon", "sampleCount", formField{Kind: "input:number", Value: "1", Min: "1", Max: "4"}},
		{"prompt-tryon", "prompt", formField{Kind: "textarea:textarea", Required: true}},
		{"prompt-tryon", "styleId", formField{Kind: "select:select-one", Value: "— not given —"}},
		{"product-to-model", "ratio", formField{Kind: "select:select-one", Value: "3:4"}},
		{"model-create", "type", formField{Kind: "select:select-one", Value: "generate", Required: true}},
		{"angle-generation", "angleIds", formField{Kind: "input:checkbox", Value: "false", Required: true}},
		{"pose-control", "poses", formField{Kind: "select:select-one", Value: "template", Required: true}},
		{"image-to-video", "duration", formField{Kind: "select:select-one", Value: "6"}},
		{"image-to-video", "generateAudio", formField{Kind: "input:checkbox", Value: "true"}},
	} {
		got := shown[tc.model][tc.key]
		tc.want.Key = tc.key
		if got != tc.want {
			t.Errorf("%s.%s: %+v, want %+v", tc.model, tc.key, got, tc.want)
		}
	}
}

// playgroundCancel submits a video and cancels it with the page's button:
// the page shows canceled with the refund, and the balance is whole again.
func playgroundCancel(t *testing.T, ctx context.Context, s *server) {
	var before, after struct{ Credits int64 }
	s.do("GET", "/v1/credits", testKey, nil, &before)
	openPage(t, ctx, s.base, "image-to-video")
	still := filepath.Join(testenv.Testdata(), "images", "fashn_model.webp")
	do(t, ctx, "submit a video",
		chromedp.SetUploadFiles(chromedp.CSS(`[data-key="imageUrl"] input[type=file]`), []string{still}),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="imageUrl"] img.preview`)),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS("#cancel")),
		chromedp.Click(chromedp.CSS("#cancel")),
		chromedp.WaitVisible(chromedp.CSS("#job-status.canceled")),
	)
	credits := eval[string](t, ctx, "the job's credits", `document.getElementById('job-credits').textContent`)
	if want := "credits used: 0 · refunded: 9"; credits != want {
		t.Errorf("the page says %q, want %q (a 6 s video costs 9)", credits, want)
	}
	if cancel := eval[bool](t, ctx, "the cancel button", `document.getElementById('cancel').hidden`); !cancel {
		t.Error("the cancel button is still shown after the job ended")
	}
	s.do("GET", "/v1/credits", testKey, nil, &after)
	if after.Credits != before.Credits {
		t.Errorf("credits went from %d to %d over a cancelled job", before.Credits, after.Credits)
	}
}
