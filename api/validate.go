package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"fashiond/fetch"
	"fashiond/spec"
)

// Error codes of 400 responses (stable; listed in README_API.md).
const (
	CodeInvalidJSON          = "invalid_json"
	CodeMissingField         = "missing_field"
	CodeInvalidType          = "invalid_type"
	CodeInvalidValue         = "invalid_value"
	CodeOutOfRange           = "out_of_range"
	CodeTooLong              = "too_long"
	CodeEmptyValue           = "empty_value"
	CodeDuplicateValue       = "duplicate_value"
	CodeUnknownField         = "unknown_field"
	CodeUnknownModel         = "unknown_model"
	CodeFieldNotAllowed      = "field_not_allowed"
	CodeConflictingFields    = "conflicting_fields"
	CodeInvalidImage         = "invalid_image"
	CodeMissingDataURIPrefix = "missing_data_uri_prefix"
	CodeImageTooLarge        = "image_too_large"
	CodeInvalidURL           = "invalid_url"
	CodeURLRefused           = "url_refused"
	CodeUnknownFaceModel     = "unknown_face_model"
	CodeUnknownPoseModel     = "unknown_pose_model"
	CodeDuplicateKey         = "duplicate_key"
	CodeInvalidUTF8          = "invalid_utf8"
)

// ValidationError is a rejected request: HTTP 400 with Code, the JSON path
// of the offending value in Field ("inputs.poses[1].cdnUrl"; "" when the
// error is not about one field) and a sentence in Msg that names the field
// and the rule.
type ValidationError struct {
	Field string
	Code  string
	Msg   string
}

func (e *ValidationError) Error() string { return e.Msg }

func verr(field, code, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks model's inputs against every rule of the spec, applies
// the defaults and returns the normalised inputs (the model's spec input
// type, images as the references given) and the job's credit cost. Image URLs are checked
// for syntax and literal internal addresses under fetch.DefaultPolicy; data
// URIs for their prefix, base64 and 25 MB decoded size. Saved-model ids
// (faceModelId, poseModelId) are not looked up: see CheckStudioRefs.
func Validate(model string, raw json.RawMessage) (normalised spec.Inputs, cost int, err *ValidationError) {
	return ValidateWith(fetch.DefaultPolicy(), model, raw)
}

// ValidateWith is Validate under policy p: p.MaxBytes bounds data URIs
// (default 25 MB) and p.Allow permits literal internal addresses in URLs.
func ValidateWith(p fetch.Policy, model string, raw json.RawMessage) (spec.Inputs, int, *ValidationError) {
	if p.MaxBytes <= 0 {
		p.MaxBytes = fetch.DefaultMaxBytes
	}
	v := &validator{policy: p}
	if !spec.Known(model) {
		return nil, 0, unknownModel(model)
	}
	in, e := v.object("inputs", raw)
	if e != nil {
		return nil, 0, e
	}
	return v.validateObject(model, in)
}

// validateObject validates the inputs object of a known model into the
// model's input type (see ValidateWith).
func (v *validator) validateObject(model string, in object) (spec.Inputs, int, *ValidationError) {
	out := spec.NewInputs(model)
	if e := v.fill(in, model, spec.FieldPointers(out)); e != nil {
		return nil, 0, e
	}
	c, err := spec.Cost(out)
	if err != nil {
		return nil, 0, verr("inputs", CodeInvalidValue, "%v", err)
	}
	return out, c, nil
}

func unknownModel(model string) *ValidationError {
	if model == "" {
		return verr("model_name", CodeMissingField, "model_name is required; it must be one of: %s", strings.Join(spec.ModelNames, ", "))
	}
	return verr("model_name", CodeUnknownModel, "model_name %s is not a model of this service; it must be one of: %s", quoteClip(model), strings.Join(spec.ModelNames, ", "))
}

// ---- the rule interpreter ----

// fill refuses fields outside model's table, then checks each rule in
// order into dst (see fields).
func (v *validator) fill(o object, model string, dst map[string]any) *ValidationError {
	m := spec.InputRules(model)
	if e := o.only(model, m.Names()...); e != nil {
		return e
	}
	return v.fields(o, m, dst)
}

// fields checks m's rules in table order, storing each value through its
// pointer in dst (*string, *int, *bool, *[]spec.Pose, *[]string). At the first
// field restricted to a variant, the fields of the other variants are
// refused if given; a field's RequiredUnless, ConflictsWith and MaxWhen
// are applied as it is checked.
func (v *validator) fields(o object, m *spec.Object, dst map[string]any) *ValidationError {
	got := map[string]string{}
	variant, gated := "", false
	for _, f := range m.Fields {
		if f.When != "" && !gated {
			gated = true
			if e := notAllowed(m, o, variant); e != nil {
				return e
			}
		}
		if f.When != "" && f.When != variant {
			continue
		}
		if f.RequiredUnless != "" && got[f.RequiredUnless] != "" {
			f.Required = false
		}
		if e := v.set(o, f, dst[f.Name]); e != nil {
			if f.RequiredUnless != "" && (e.Code == CodeMissingField || e.Code == CodeEmptyValue) {
				e.Msg = fmt.Sprintf("%s is required when %s is %s (it may be omitted only when %s is given)",
					o.field(f.Name), o.field(m.Variant), f.When, o.field(f.RequiredUnless))
			}
			return e
		}
		if s, ok := dst[f.Name].(*string); ok {
			got[f.Name] = *s
			if f.Name == m.Variant {
				variant = *s
			}
		}
		if e := crossChecks(m, o, f, got, variant, dst[f.Name]); e != nil {
			return e
		}
	}
	return nil
}

// notAllowed refuses a non-empty field of a variant other than variant.
func notAllowed(m *spec.Object, o object, variant string) *ValidationError {
	for _, f := range m.Fields {
		if f.When == "" || f.When == variant {
			continue
		}
		if s, ok := o.m[f.Name]; ok && !isNull(s) && !bytes.Equal(bytes.TrimSpace(s), []byte(`""`)) {
			return verr(o.field(f.Name), CodeFieldNotAllowed, "%s is only accepted when %s is %s; %s %s takes %s",
				o.field(f.Name), o.field(m.Variant), f.When, m.Variant, variant, spec.JoinAnd(m.RequiredIn(variant)))
		}
	}
	return nil
}

// crossChecks applies f's ConflictsWith and MaxWhen to its checked value.
func crossChecks(m *spec.Object, o object, f spec.Field, got map[string]string, variant string, dst any) *ValidationError {
	if f.ConflictsWith != "" && got[f.Name] != "" && got[f.ConflictsWith] != "" {
		return verr(o.field(f.Name), CodeConflictingFields, "give either %s or %s, not both: %s", o.field(f.ConflictsWith), o.field(f.Name), f.ConflictNote)
	}
	if mx, ok := f.MaxWhen[variant]; ok {
		if n := *dst.(*int); n > mx {
			return verr(o.field(f.Name), CodeOutOfRange, "%s must be %s when %s is %s, got %d", o.field(f.Name), rangeText(f.Min, mx), o.field(m.Variant), variant, n)
		}
	}
	return nil
}

// rangeText is "1" for [1, 1] and "from 1 to 4" otherwise.
func rangeText(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("from %d to %d", lo, hi)
}

// set checks one field by its rule and stores the value through dst.
func (v *validator) set(o object, f spec.Field, dst any) *ValidationError {
	var e *ValidationError
	switch d := dst.(type) {
	case *string:
		*d, e = v.str(o, f)
	case *int:
		*d, e = o.integer(f)
	case *bool:
		def, _ := f.Default.(bool)
		*d, e = o.boolean(f.Name, def)
	case *[]spec.Pose:
		*d, e = v.poses(o, f)
	case *[]string:
		*d, e = o.angles(f)
	default:
		panic(fmt.Sprintf("api: input %s has no destination of a known type (%T)", f.Name, dst))
	}
	return e
}

// str checks a string-valued field.
func (v *validator) str(o object, f spec.Field) (string, *ValidationError) {
	def, _ := f.Default.(string)
	switch f.Kind {
	case spec.KindImage:
		return v.image(o, f.Name, f.Required, imageURLOrData)
	case spec.KindDataImage:
		return v.image(o, f.Name, f.Required, imageDataOnly)
	case spec.KindText:
		return o.text(f.Name, f.Required, f.MaxChars)
	case spec.KindID:
		return o.id(f.Name)
	case spec.KindEnumOrEmpty:
		return o.enumOrEmpty(f.Name, f.Enum, def)
	case spec.KindEnum:
		s, e := o.enum(f.Name, f.Enum, def)
		if e == nil && s == "" && f.Required {
			return "", verr(o.field(f.Name), CodeMissingField, "%s is required: %s", o.field(f.Name), spec.JoinOr(f.Enum))
		}
		return s, e
	}
	panic("api: input " + f.Name + " is not a string")
}

// integer checks an integer field: its range, then its accepted values.
func (o object) integer(f spec.Field) (int, *ValidationError) {
	def, _ := f.Default.(int)
	n, e := o.intRange(f.Name, def, f.Min, f.Max)
	if e == nil && len(f.Ints) > 0 && !slices.Contains(f.Ints, n) {
		return 0, verr(o.field(f.Name), CodeInvalidValue, "%s must be %s (%s), got %d", o.field(f.Name), spec.JoinOr(spec.IntsText(f.Ints)), f.Unit, n)
	}
	return n, e
}

// poses checks pose-control's array of poses (f.Items: spec.PoseRules).
func (v *validator) poses(o object, f spec.Field) ([]spec.Pose, *ValidationError) {
	items, e := o.array(f.Name, f.Min, f.Max, f.Noun)
	if e != nil {
		return nil, e
	}
	out := make([]spec.Pose, 0, len(items))
	for i, raw := range items {
		po, e := v.object(fmt.Sprintf("%s[%d]", o.field(f.Name), i), raw)
		if e != nil {
			return nil, e
		}
		var p spec.Pose
		m := f.Items
		if p.Type, e = v.str(po, m.Field(m.Variant)); e != nil {
			return nil, e
		}
		accepted := []string{m.Variant}
		for _, g := range m.Fields {
			if g.When == p.Type {
				accepted = append(accepted, g.Name)
			}
		}
		if e := po.onlyPose(p.Type, accepted...); e != nil {
			return nil, e
		}
		if e := v.fields(po, m, spec.FieldPointers(&p)); e != nil {
			return nil, e
		}
		out = append(out, p)
	}
	return out, nil
}

// angles checks angle-generation's array of distinct angle ids.
func (o object) angles(f spec.Field) ([]string, *ValidationError) {
	items, e := o.array(f.Name, f.Min, f.Max, f.Noun)
	if e != nil {
		return nil, e
	}
	out := make([]string, 0, len(items))
	for i, raw := range items {
		path := fmt.Sprintf("%s[%d]", o.field(f.Name), i)
		s, e := stringValue(path, raw)
		if e != nil {
			return nil, e
		}
		if !slices.Contains(f.Enum, s) {
			return nil, verr(path, CodeInvalidValue, "%s must be one of %s, got %s", path, strings.Join(f.Enum, ", "), quoteClip(s))
		}
		if j := slices.Index(out, s); j >= 0 {
			return nil, verr(path, CodeDuplicateValue, "%s repeats %q (already at %s[%d]); each angle may appear once", path, s, o.field(f.Name), j)
		}
		out = append(out, s)
	}
	return out, nil
}

// ---- JSON value helpers ----

type validator struct {
	policy fetch.Policy
}

type object struct {
	path string
	m    map[string]json.RawMessage
}

func (o object) field(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns a field's raw value; absent and null are "not given".
func (o object) get(key string) (json.RawMessage, bool) {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (v *validator) object(path string, raw json.RawMessage) (object, *ValidationError) {
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		return object{}, verr(path, CodeMissingField, "%s is required and must be a JSON object", path)
	}
	if k := jsonKind(raw); k != "an object" {
		return object{}, verr(path, CodeInvalidType, "%s must be a JSON object, got %s", path, k)
	}
	if e := strictJSON(path, raw); e != nil {
		return object{}, e
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return object{}, verr(path, CodeInvalidJSON, "%s is not valid JSON: %v", path, err)
	}
	return object{path: path, m: m}, nil
}

// strictJSON refuses what encoding/json would silently accept in raw (the
// value at path): a member name given twice (the last would win) and
// invalid UTF-8 (it would become U+FFFD).
func strictJSON(path string, raw json.RawMessage) *ValidationError {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.ReadValue(); err != nil {
		ve, rerr := jsonErr(err)
		if ve == nil {
			return verr(path, CodeInvalidJSON, "%s is not valid JSON: %v", path, rerr)
		}
		if ve.Field != "" && path != "" {
			rel := ve.Field
			ve.Field = path + "." + rel
			if strings.HasPrefix(rel, "[") {
				ve.Field = path + rel
			}
			ve.Msg = strings.Replace(ve.Msg, rel, ve.Field, 1)
		}
		return ve
	}
	return nil
}

// only rejects keys outside accepted, naming the sorted accepted keys.
func (o object) only(model string, accepted ...string) *ValidationError {
	if k := o.firstUnknown(accepted); k != "" {
		s := slices.Clone(accepted)
		slices.Sort(s)
		return verr(o.field(k), CodeUnknownField, "%s is not an input of %s; accepted inputs: %s", o.field(clipKey(k)), model, strings.Join(s, ", "))
	}
	return nil
}

func (o object) onlyPose(typ string, accepted ...string) *ValidationError {
	if k := o.firstUnknown(accepted); k != "" {
		s := slices.Clone(accepted)
		slices.Sort(s)
		return verr(o.field(k), CodeUnknownField, "%s is not a field of a %s pose; accepted fields: %s", o.field(clipKey(k)), typ, strings.Join(s, ", "))
	}
	return nil
}

func (o object) firstUnknown(accepted []string) string {
	var unknown []string
	for k := range o.m {
		if !slices.Contains(accepted, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	return unknown[0]
}

func clipKey(k string) string {
	if utf8.RuneCountInString(k) > 64 {
		return string([]rune(k)[:64]) + "..."
	}
	return k
}

// jsonKind names the JSON type of raw for messages.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func stringValue(path string, raw json.RawMessage) (string, *ValidationError) {
	if k := jsonKind(raw); k != "a string" {
		return "", verr(path, CodeInvalidType, "%s must be a string, got %s", path, k)
	}
	if t := bytes.TrimSpace(raw); len(t) >= 2 && t[len(t)-1] == '"' && bytes.IndexByte(t, '\\') < 0 && utf8.Valid(t) {
		// No escapes: the string is the bytes between the quotes. raw is
		// never modified after decoding, so the string may share it (a data
		// URI of 30 MB is not copied).
		return unsafe.String(unsafe.SliceData(t[1:]), len(t)-2), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", verr(path, CodeInvalidJSON, "%s is not a valid JSON string: %v", path, err)
	}
	return s, nil
}

// str returns a string field ("" when not given).
func (o object) str(key string, required bool) (string, bool, *ValidationError) {
	raw, ok := o.get(key)
	if !ok {
		if required {
			return "", false, verr(o.field(key), CodeMissingField, "%s is required", o.field(key))
		}
		return "", false, nil
	}
	s, e := stringValue(o.field(key), raw)
	return s, true, e
}

// text is a free-text string of at most max characters; a required text
// must hold more than white space.
func (o object) text(key string, required bool, max int) (string, *ValidationError) {
	s, _, e := o.str(key, required)
	if e != nil {
		return "", e
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", verr(o.field(key), CodeTooLong, "%s is %d characters long, the limit is %d", o.field(key), n, max)
	}
	if required && strings.TrimSpace(s) == "" {
		return "", verr(o.field(key), CodeEmptyValue, "%s must not be empty", o.field(key))
	}
	return s, nil
}

// enum is a string from set; def when not given. An empty string is not a
// member.
func (o object) enum(key string, set []string, def string) (string, *ValidationError) {
	s, given, e := o.str(key, false)
	if e != nil {
		return "", e
	}
	if !given {
		return def, nil
	}
	if !slices.Contains(set, s) {
		return "", verr(o.field(key), CodeInvalidValue, "%s must be one of %s, got %s", o.field(key), strings.Join(set, ", "), quoteClip(s))
	}
	return s, nil
}

// enumOrEmpty is enum where "" means "not given" (ratio, styleId).
func (o object) enumOrEmpty(key string, set []string, def string) (string, *ValidationError) {
	s, given, e := o.str(key, false)
	if e != nil {
		return "", e
	}
	if !given || s == "" {
		return def, nil
	}
	if !slices.Contains(set, s) {
		return "", verr(o.field(key), CodeInvalidValue, "%s must be one of %s (or empty), got %s", o.field(key), strings.Join(set, ", "), quoteClip(s))
	}
	return s, nil
}

// intRange is an integer in [min, max]; def when not given. 2.0 counts as
// an integer, 2.5 and "2" do not.
func (o object) intRange(key string, def, min, max int) (int, *ValidationError) {
	raw, ok := o.get(key)
	if !ok {
		return def, nil
	}
	path := o.field(key)
	rangeMsg := fmt.Sprintf("an integer from %d to %d", min, max)
	if max == math.MaxInt32 {
		rangeMsg = "an integer"
	}
	if k := jsonKind(raw); k != "a number" {
		return 0, verr(path, CodeInvalidType, "%s must be %s, got %s", path, rangeMsg, k)
	}
	num := string(bytes.TrimSpace(raw))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, verr(path, CodeInvalidJSON, "%s is not a valid JSON number", path)
	}
	if math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, verr(path, CodeInvalidType, "%s must be %s, got %s", path, rangeMsg, clip(num, 30))
	}
	if f < float64(min) || f > float64(max) {
		return 0, verr(path, CodeOutOfRange, "%s must be %s, got %s", path, rangeMsg, clip(num, 30))
	}
	return int(f), nil
}

func (o object) boolean(key string, def bool) (bool, *ValidationError) {
	raw, ok := o.get(key)
	if !ok {
		return def, nil
	}
	if k := jsonKind(raw); k != "a boolean" {
		return false, verr(o.field(key), CodeInvalidType, "%s must be true or false, got %s", o.field(key), k)
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, verr(o.field(key), CodeInvalidJSON, "%s is not a valid JSON boolean", o.field(key))
	}
	return b, nil
}

// array returns the elements of an array field holding min..max items.
func (o object) array(key string, min, max int, noun string) ([]json.RawMessage, *ValidationError) {
	raw, ok := o.get(key)
	path := o.field(key)
	if !ok {
		return nil, verr(path, CodeMissingField, "%s is required: an array of %d to %d %ss", path, min, max, noun)
	}
	if k := jsonKind(raw); k != "an array" {
		return nil, verr(path, CodeInvalidType, "%s must be an array of %ss, got %s", path, noun, k)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, verr(path, CodeInvalidJSON, "%s is not a valid JSON array: %v", path, err)
	}
	if len(items) < min || len(items) > max {
		return nil, verr(path, CodeOutOfRange, "%s must hold %d to %d %ss, got %d", path, min, max, noun, len(items))
	}
	return items, nil
}

// id is an optional saved-model id (syntax only; existence is checked by
// CheckStudioRefs).
func (o object) id(key string) (string, *ValidationError) {
	s, _, e := o.str(key, false)
	if e != nil {
		return "", e
	}
	if len(s) > spec.MaxIDChars {
		return "", verr(o.field(key), CodeTooLong, "%s is %d characters long, the limit is %d", o.field(key), len(s), spec.MaxIDChars)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", verr(o.field(key), CodeInvalidValue, "%s must be a saved model id (letters, digits and dashes, e.g. a UUID), got %s", o.field(key), quoteClip(s))
		}
	}
	return s, nil
}

type imageKind int

const (
	imageURLOrData imageKind = iota
	imageDataOnly
)

// image checks an image reference: an http(s) URL (syntax and literal
// address) or a data:image/<type>;base64, URI (prefix, base64, size).
func (v *validator) image(o object, key string, required bool, kind imageKind) (string, *ValidationError) {
	s, given, e := o.str(key, required)
	if e != nil || !given && !required {
		return "", e
	}
	path := o.field(key)
	if s == "" {
		if !required {
			return "", nil
		}
		return "", verr(path, CodeEmptyValue, "%s must not be empty", path)
	}
	if fetch.IsDataURI(s) {
		mt, _, err := fetch.CheckDataURI(s, v.policy.MaxBytes)
		var tl *fetch.TooLargeError
		switch {
		case errors.As(err, &tl):
			return "", verr(path, CodeImageTooLarge, "%s: %v", path, tl)
		case err != nil:
			return "", verr(path, CodeInvalidImage, "%s: %v", path, err)
		case !fetch.IsRasterType(mt):
			return "", verr(path, CodeInvalidImage, "%s: the data URI media type %s is not a raster image; send JPEG, PNG or WEBP", path, clip(mt, 40))
		}
		return s, nil
	}
	if kind == imageDataOnly {
		if looksLikeBase64(s) {
			return "", verr(path, CodeMissingDataURIPrefix, "%s looks like raw base64 without the data URI prefix; send it as data:image/jpeg;base64,<data> (or image/png, image/webp)", path)
		}
		return "", verr(path, CodeInvalidImage, "%s must be a base64 data URI with the data:image/<type>;base64, prefix", path)
	}
	if !strings.Contains(s, "://") && looksLikeBase64(s) {
		return "", verr(path, CodeMissingDataURIPrefix, "%s looks like raw base64 without the data URI prefix; send it as data:image/jpeg;base64,<data> (or image/png, image/webp), or send a URL", path)
	}
	if err := fetch.CheckURLSyntax(s); err != nil {
		return "", verr(path, CodeInvalidURL, "%s must be an http(s) URL or a data:image/<type>;base64, URI: %v", path, err)
	}
	if err := v.policy.CheckURL(s); err != nil {
		return "", verr(path, CodeURLRefused, "%s: %v", path, err)
	}
	return s, nil
}

// looksLikeBase64 reports whether s is at least 16 characters of the
// base64 alphabet (a raw payload sent without its data URI prefix).
func looksLikeBase64(s string) bool {
	if len(s) < 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_' || c == '\n' || c == '\r') {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n]) + "..."
	}
	return s
}

func quoteClip(s string) string { return strconv.Quote(clip(s, 64)) }

// marshal is json.Marshal without HTML escaping and without the trailing
// newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
