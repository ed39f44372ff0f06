package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"fashiond/fetch"
	"fashiond/pipelines"
	"fashiond/storage"
)

// Job inputs out of Redis: at submission every data URI image of a job's
// inputs is written to the blob store under
// private/inputs/<job id>/<sha256 of the bytes>.<ext> and the inputs keep
// the reference "blob:<key>" instead. The blobs are deleted when the job
// ends (any terminal state), when its submission is refused, and at the
// latest with the job at retention. The private/ prefix is never served
// under {cdn_url}.

// DefaultInputQuota is the default of Options.InputQuota: the input bytes
// one API key may have stored at once (its unfinished jobs' images).
const DefaultInputQuota = 1 << 30

// blobRefPrefix marks an input image kept in the blob store.
const blobRefPrefix = "blob:"

// ErrInputQuota is a submission refused because the key's unfinished jobs
// already hold Options.InputQuota bytes of input images (nothing charged).
var ErrInputQuota = errors.New("input storage quota exceeded")

// QuotaError carries the numbers of an ErrInputQuota.
type QuotaError struct {
	Stored, Adding, Quota int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%v: %s stored, %s more, quota %s", ErrInputQuota, fetch.FormatMB(e.Stored), fetch.FormatMB(e.Adding), fetch.FormatMB(e.Quota))
}
func (e *QuotaError) Unwrap() error { return ErrInputQuota }

// inputsFolder is the blob folder of a job's input images.
func inputsFolder(jobID string) string { return "private/inputs/" + jobID + "/" }

// spoolInputs writes the data URI images of inputs to the blob store and
// returns the inputs with references in their place and the bytes stored.
// The JSON is read in place (no copy of the images); each image is decoded
// twice as a stream (hash, then store), so no decoded copy is held either.
func (s *Service) spoolInputs(ctx context.Context, jobID string, inputs json.RawMessage) (json.RawMessage, int64, error) {
	if !bytes.Contains(inputs, []byte(`"data:`)) && !bytes.Contains(inputs, []byte(`"DATA:`)) {
		return inputs, 0, nil
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(inputs))
	var out bytes.Buffer
	var stored int64
	last := 0
	for {
		kind := dec.PeekKind()
		if kind == 0 {
			break
		}
		if kind != '"' || dec.StackDepth() == 0 || isName(dec) {
			if _, err := dec.ReadToken(); err != nil {
				return nil, 0, fmt.Errorf("jobs: inputs: %w", err)
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, 0, fmt.Errorf("jobs: inputs: %w", err)
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		str := v[1 : len(v)-1]
		if bytes.IndexByte(v, '\\') >= 0 {
			if str, err = jsontext.AppendUnquote(nil, v); err != nil {
				return nil, 0, fmt.Errorf("jobs: inputs: %w", err)
			}
		}
		if len(str) < 5 || !fetch.IsDataURI(string(str[:5])) {
			continue
		}
		key, n, err := s.storeDataURI(ctx, jobID, string(str))
		if err != nil {
			return nil, 0, err
		}
		if out.Len() == 0 {
			out.Grow(len(inputs) / 16)
		}
		out.Write(inputs[last:start])
		ref, _ := json.Marshal(blobRefPrefix + key)
		out.Write(ref)
		last = end
		stored += n
	}
	out.Write(inputs[last:])
	return out.Bytes(), stored, nil
}

// isName reports whether the next string token is an object member name.
func isName(dec *jsontext.Decoder) bool {
	k, n := dec.StackIndex(dec.StackDepth())
	return k == '{' && n%2 == 0
}

// storeDataURI stores the image of a data URI under the job's inputs
// folder, named by the SHA-256 of its bytes, and returns its key and size.
func (s *Service) storeDataURI(ctx context.Context, jobID, uri string) (string, int64, error) {
	_, payload, ok := strings.Cut(uri, ",")
	if !ok {
		return "", 0, errors.New("jobs: inputs: a data URI without data")
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(payload, "=") && len(payload)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	stream := func() io.Reader { return base64.NewDecoder(enc, strings.NewReader(payload)) }
	h := sha256.New()
	var head [16]byte
	n, err := io.ReadFull(stream(), head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", 0, fmt.Errorf("jobs: inputs: %w", err)
	}
	size, err := io.Copy(h, stream())
	if err != nil {
		return "", 0, fmt.Errorf("jobs: inputs: %w", err)
	}
	ext := inputExt(fetch.Sniff(head[:n]))
	key := inputsFolder(jobID) + hex.EncodeToString(h.Sum(nil)) + ext
	if err := s.store.Put(ctx, key, storage.ContentTypeOf(key), stream()); err != nil {
		return "", 0, fmt.Errorf("jobs: inputs: %w", err)
	}
	return key, size, nil
}

// inputExt is the blob extension of an input image of format (Sniff).
func inputExt(format string) string {
	switch format {
	case fetch.FormatJPEG:
		return ".jpg"
	case fetch.FormatPNG:
		return ".png"
	case fetch.FormatWEBP:
		return ".webp"
	}
	return ".bin"
}

// dropInputs deletes a job's input images and releases their quota.
// Idempotent; errors are logged (the expiry pass retries the delete).
func (s *Service) dropInputs(ctx context.Context, id, owner string) {
	if err := s.store.DeletePrefix(ctx, inputsFolder(id)); err != nil {
		s.log.Warn("delete job inputs", "job", id, "err", err)
	}
	if owner == "" {
		return
	}
	if err := s.db.ReleaseInputQuota(ctx, id, owner); err != nil {
		s.log.Warn("release input quota", "job", id, "err", err)
	}
}

// inputLoader resolves the blob references of a job's inputs and passes
// every other reference (URLs, data URIs) to next.
type inputLoader struct {
	store storage.Store
	jobID string
	next  pipelines.ImageLoader
}

// byteDecoder is what fetch.Loader offers besides Load: decoding bytes
// under its limits.
type byteDecoder interface {
	Decode(field string, data []byte) (image.Image, string, error)
}

func (l inputLoader) Load(ctx context.Context, field, ref string) (image.Image, error) {
	key, ok := strings.CutPrefix(ref, blobRefPrefix)
	if !ok {
		return l.next.Load(ctx, field, ref)
	}
	if !strings.HasPrefix(key, inputsFolder(l.jobID)) {
		return nil, pipelines.Failf("%s: the stored input belongs to another job", field)
	}
	rc, _, err := l.store.Open(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, pipelines.Failf("%s: the stored input image is gone", field)
	}
	if err != nil {
		return nil, &pipelines.Error{Msg: field + ": the stored input image cannot be read", Transient: true, Err: err}
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, &pipelines.Error{Msg: field + ": the stored input image cannot be read", Transient: true, Err: err}
	}
	if d, ok := l.next.(byteDecoder); ok {
		img, _, err := d.Decode(field, data)
		return img, err
	}
	uri, err := fetch.EncodeDataURI(data)
	if err != nil {
		uri = "data:image/unknown;base64," + base64.StdEncoding.EncodeToString(data)
	}
	return l.next.Load(ctx, field, uri)
}
