package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"fashiond/fetch"
)

// dataURISlack is the room a data URI needs besides its base64 payload (the
// "data:image/<type>;base64," prefix and the JSON quotes).
const dataURISlack = 256

// parsedBody is a decoded POST /v1/run body: the top-level members and,
// when "inputs" is an object, its members. Values share the body's buffer
// (which must not change afterwards).
type parsedBody struct {
	top    map[string]json.RawMessage
	inputs *object // nil when inputs is absent or not an object (see top["inputs"])
}

// readRunBody decodes one JSON object from body in place (no copy of its
// values): duplicate member names, invalid UTF-8 and trailing data are 400s
// naming the field, and an inputs string longer than any accepted value
// (maxImage bytes as a base64 data URI) is refused before the rest is
// looked at.
func readRunBody(body *bytes.Buffer, maxImage int64) (*parsedBody, *ValidationError, error) {
	dec := jsontext.NewDecoder(body)
	if k := dec.PeekKind(); k != '{' {
		return nonObjectBody(dec, k)
	}
	if _, err := dec.ReadToken(); err != nil {
		return decodeFail[parsedBody](err)
	}
	pb := &parsedBody{top: map[string]json.RawMessage{}}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return decodeFail[parsedBody](err)
		}
		key := name.String()
		if key == "inputs" && dec.PeekKind() == '{' {
			o, ve, err := readInputs(dec, maxImage)
			if ve != nil || err != nil {
				return nil, ve, err
			}
			pb.inputs = o
			pb.top[key] = json.RawMessage("{}")
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return decodeFail[parsedBody](err)
		}
		pb.top[key] = json.RawMessage(v)
	}
	if _, err := dec.ReadToken(); err != nil {
		return decodeFail[parsedBody](err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		if err == nil {
			return nil, verr("", CodeInvalidJSON, "the request body is not valid JSON: data follows the object"), nil
		}
		return decodeFail[parsedBody](err)
	}
	return pb, nil, nil
}

// readInputs reads the inputs object member by member, refusing a string
// that no field could accept before the rest of the body is read.
func readInputs(dec *jsontext.Decoder, maxImage int64) (*object, *ValidationError, error) {
	if _, err := dec.ReadToken(); err != nil {
		return decodeFail[object](err)
	}
	o := &object{path: "inputs", m: map[string]json.RawMessage{}}
	limit := maxStringLen(maxImage)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return decodeFail[object](err)
		}
		key := name.String()
		v, err := dec.ReadValue()
		if err != nil {
			return decodeFail[object](err)
		}
		if int64(len(v)) > limit && v.Kind() == '"' {
			return nil, oversizeString(o.field(key), v, maxImage), nil
		}
		o.m[key] = json.RawMessage(v)
	}
	if _, err := dec.ReadToken(); err != nil {
		return decodeFail[object](err)
	}
	return o, nil, nil
}

// maxStringLen is the longest string any field accepts: an image of
// maxImage bytes as a data URI.
func maxStringLen(maxImage int64) int64 { return maxImage/3*4 + 4 + dataURISlack }

// oversizeString is the error for an inputs string longer than any field
// accepts: image_too_large (with the decoded size) for a data URI, else
// too_long.
func oversizeString(field string, v jsontext.Value, maxImage int64) *ValidationError {
	s := v[1 : len(v)-1]
	if fetch.IsDataURI(string(s[:min(len(s), 5)])) {
		if i := bytes.IndexByte(s, ','); i > 0 {
			size := int64(len(s)-i-1) / 4 * 3
			return verr(field, CodeImageTooLarge, "%s: %v", field, &fetch.TooLargeError{Size: size, Limit: maxImage})
		}
	}
	return verr(field, CodeTooLong, "%s is %s long, longer than any accepted value (images: %s as a data URI)", field, fetch.FormatMB(int64(len(s))), fetch.FormatMB(maxImage))
}

// nonObjectBody explains a body that does not start with an object.
func nonObjectBody(dec *jsontext.Decoder, k jsontext.Kind) (*parsedBody, *ValidationError, error) {
	v, err := dec.ReadValue()
	switch {
	case err == io.EOF:
		return nil, verr("", CodeInvalidJSON, "the request body is empty; send a JSON object {\"model_name\": ..., \"inputs\": {...}}"), nil
	case err != nil:
		return decodeFail[parsedBody](err)
	}
	return nil, verr("", CodeInvalidType, "the request body must be a JSON object, got %s", jsonKind(json.RawMessage(v[:min(len(v), 1)]))), nil
}

// decodeFail is jsonErr in the return shape of a reader.
func decodeFail[T any](err error) (*T, *ValidationError, error) {
	ve, rerr := jsonErr(err)
	return nil, ve, rerr
}

// jsonErr turns a decoder error into a 400 naming the field (duplicate
// member, invalid UTF-8, syntax), or passes a read error of the body on.
func jsonErr(err error) (*ValidationError, error) {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return verr("", CodeInvalidJSON, "the request body is not valid JSON: it ends too early"), nil
		}
		return nil, err
	}
	if se.Err != nil && !isSyntaxCause(se.Err) {
		return nil, se.Err // a read error surfaced through the decoder
	}
	field := pointerField(string(se.JSONPointer))
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		return verr(field, CodeDuplicateKey, "%s is given more than once; each field may appear once", fieldOrBody(field)), nil
	case strings.Contains(se.Err.Error(), "UTF-8") || strings.Contains(se.Err.Error(), "surrogate"):
		return verr(field, CodeInvalidUTF8, "%s is not valid UTF-8 text", fieldOrBody(field)), nil
	}
	return verr("", CodeInvalidJSON, "the request body is not valid JSON at byte %d (in %s): %v", se.ByteOffset, fieldOrBody(field), se.Err), nil
}

// isSyntaxCause tells a grammar error from an I/O error that the decoder
// wrapped while reading.
func isSyntaxCause(err error) bool {
	var mbe *http.MaxBytesError
	var ne interface{ Timeout() bool }
	return !errors.As(err, &mbe) && !errors.As(err, &ne) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, http.ErrBodyReadAfterClose)
}

func fieldOrBody(field string) string {
	if field == "" {
		return "the request body"
	}
	return field
}

// pointerField turns a JSON pointer ("/inputs/poses/1/cdnUrl") into the
// field path of error bodies ("inputs.poses[1].cdnUrl"); numeric tokens are
// array indices (no field of the API has a numeric name).
func pointerField(p string) string {
	if p == "" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(clipKey(tok))
	}
	return b.String()
}

// readBody reads a request body into one buffer of its declared size (no
// growth copies), at most max bytes (*http.MaxBytesError above). A JSON
// string longer than maxString stops the read at once (*longStringError),
// so a body of oversize "images" is never held whole.
func readBody(w http.ResponseWriter, r *http.Request, max, maxString int64) (*bytes.Buffer, error) {
	n := r.ContentLength
	if n < 0 || n > max {
		n = min(max, bodyChunk)
	}
	buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	_, err := buf.ReadFrom(&stringGuard{r: http.MaxBytesReader(w, r.Body, max), max: maxString})
	return buf, err
}

// longStringError is a body with a JSON string longer than any field
// accepts.
type longStringError struct{ limit int64 }

func (e *longStringError) Error() string {
	return fmt.Sprintf("the request body holds a string longer than %s, more than any field accepts (an image of %s as a data URI)",
		fetch.FormatMB(e.limit), fetch.FormatMB(e.limit/4*3))
}

// stringGuard passes a JSON text through, failing as soon as one string
// runs longer than max bytes (escapes count as their bytes).
type stringGuard struct {
	r        io.Reader
	max, run int64
	inString bool
	escape   bool
}

func (g *stringGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if e := g.scan(p[:n]); e != nil {
		return n, e
	}
	return n, err
}

func (g *stringGuard) scan(b []byte) error {
	for len(b) > 0 {
		if !g.inString {
			i := bytes.IndexByte(b, '"')
			if i < 0 {
				return nil
			}
			g.inString, g.run, b = true, 0, b[i+1:]
			continue
		}
		if g.escape {
			g.escape, g.run, b = false, g.run+1, b[1:]
			continue
		}
		i := bytes.IndexAny(b, "\"\\")
		if i < 0 {
			g.run += int64(len(b))
			b = nil
		} else {
			g.run += int64(i)
			if b[i] == '"' {
				g.inString = false
			} else {
				g.escape, g.run = true, g.run+1
			}
			b = b[i+1:]
		}
		if g.run > g.max {
			return &longStringError{limit: g.max}
		}
	}
	return nil
}

// bodyChunk is the initial buffer of a body of unknown length.
const bodyChunk = 64 << 10
