package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"

	"fashiond/fetch"
	"fashiond/pipelines"
	"fashiond/spec"
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

// spoolInputs writes the data URI images of in to the blob store, puts
// "blob:<key>" references in their place (in in) and returns the bytes
// stored. It reads the typed inputs: their image fields are the rule
// table's (spec.Images); each image is decoded twice as a stream (hash,
// then store), so no decoded copy is held. Inputs of a model outside the
// spec (nil) have none.
func (s *Service) spoolInputs(ctx context.Context, jobID string, in spec.Inputs) (int64, error) {
	if in == nil {
		return 0, nil
	}
	var stored int64
	for _, im := range spec.Images(in) {
		if !fetch.IsDataURI(*im.Ref) {
			continue
		}
		key, n, err := s.storeDataURI(ctx, jobID, *im.Ref)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", im.Field, err)
		}
		*im.Ref = blobRefPrefix + key
		stored += n
	}
	return stored, nil
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

// inputLoader resolves the blob references of a job's inputs, handing
// their bytes to next's Decode, and passes every other reference (URLs,
// data URIs) to next.
type inputLoader struct {
	store storage.Store
	jobID string
	next  pipelines.ImageLoader
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
	img, _, err := l.next.Decode(field, data)
	return img, err
}

// Decode implements pipelines.ImageLoader.
func (l inputLoader) Decode(field string, data []byte) (image.Image, string, error) {
	return l.next.Decode(field, data)
}
