package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a Store in a bucket of an S3-compatible object store (AWS S3,
// MinIO, versitygw, SeaweedFS, Ceph RGW...), under an optional key prefix.
// Public URLs are either baseURL + "/" + key (a CDN or the API's /cdn/
// route, which Handler serves from the bucket) or presigned GET URLs of the
// bucket itself.
type S3 struct {
	client  *minio.Client
	bucket  string
	prefix  string // "" or "some/prefix/"
	baseURL string
	presign time.Duration
}

// Lookup is how the bucket is addressed on the endpoint.
type Lookup string

// The bucket addressings.
const (
	// LookupAuto lets the client decide (virtual-hosted on AWS, path-style
	// on other endpoints).
	LookupAuto Lookup = "auto"
	// LookupPath is http://endpoint/bucket/key.
	LookupPath Lookup = "path"
	// LookupVirtual is http://bucket.endpoint/key.
	LookupVirtual Lookup = "virtual"
)

// S3Options configures NewS3. Bucket and the credentials are required.
type S3Options struct {
	Bucket string
	// Prefix is prepended to every key ("" or slash-separated segments,
	// no leading or trailing slash).
	Prefix string
	// Endpoint is the server's base URL, http:// or https://host[:port];
	// empty is AWS (https://s3.amazonaws.com).
	Endpoint string
	// Region is the bucket's region (DefaultS3Region when empty). It is
	// always given, so presigning never asks the server.
	Region string
	// AccessKey, SecretKey and the optional SessionToken sign requests.
	// They are never logged nor put into an error message.
	AccessKey, SecretKey, SessionToken string
	// Lookup is the bucket addressing (LookupAuto when empty).
	Lookup Lookup
	// BaseURL is the public URL prefix of keys when Presign is zero.
	BaseURL string
	// Presign, when positive, makes URL return presigned GET URLs valid
	// this long (at most MaxPresign).
	Presign time.Duration
	// Transport is the HTTP transport (the client's default when nil).
	Transport http.RoundTripper
}

// Tuning of the S3 store.
const (
	// DefaultS3Region is the region when none is given.
	DefaultS3Region = "us-east-1"
	// DefaultS3Endpoint is AWS S3.
	DefaultS3Endpoint = "https://s3.amazonaws.com"
	// MaxPresign is the longest validity of a SigV4 presigned URL.
	MaxPresign = 7 * 24 * time.Hour
	// s3PartSize is the multipart part size (and so the buffer) of uploads
	// whose length is not known in advance (spooled inputs).
	s3PartSize = 16 << 20
	// s3CheckTimeout bounds the bucket check of NewS3.
	s3CheckTimeout = 15 * time.Second
	// s3NoSuchKey is the S3 error code of a missing object.
	s3NoSuchKey = "NoSuchKey"
)

// NewS3 connects to the bucket and checks that it exists and that the
// credentials may read it, so a wrong endpoint, bucket or key is a start-up
// error rather than a failed job later.
func NewS3(ctx context.Context, o S3Options) (*S3, error) {
	if err := CheckBucket(o.Bucket); err != nil {
		return nil, err
	}
	if o.Prefix != "" {
		if err := checkPath(o.Prefix); err != nil {
			return nil, fmt.Errorf("storage: S3 prefix: %w", err)
		}
	}
	if o.AccessKey == "" || o.SecretKey == "" {
		return nil, errors.New("storage: S3 needs an access key and a secret key")
	}
	if o.Presign < 0 || o.Presign > MaxPresign {
		return nil, fmt.Errorf("storage: presigned URLs are valid from 1s to %s", MaxPresign)
	}
	host, secure, err := ParseEndpoint(o.Endpoint)
	if err != nil {
		return nil, err
	}
	lookup, err := bucketLookup(o.Lookup)
	if err != nil {
		return nil, err
	}
	region := o.Region
	if region == "" {
		region = DefaultS3Region
	}
	client, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(o.AccessKey, o.SecretKey, o.SessionToken),
		Secure:       secure,
		Region:       region,
		BucketLookup: lookup,
		Transport:    o.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: S3 client for %s: %w", host, err)
	}
	s := &S3{client: client, bucket: o.Bucket, baseURL: strings.TrimRight(o.BaseURL, "/"), presign: o.Presign}
	if o.Prefix != "" {
		s.prefix = o.Prefix + "/"
	}
	return s, s.check(ctx, host)
}

// check verifies that the bucket exists and can be read.
func (s *S3) check(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, s3CheckTimeout)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("storage: S3 bucket %q at %s: %w", s.bucket, host, err)
	}
	if !ok {
		return fmt.Errorf("storage: S3 bucket %q does not exist at %s: create it first (e.g. `aws s3 mb s3://%s`)", s.bucket, host, s.bucket)
	}
	return nil
}

// ParseEndpoint turns an endpoint URL (empty: DefaultS3Endpoint) into the
// client's host[:port] and whether it uses TLS. Errors do not echo the
// value (it might carry credentials).
func ParseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		endpoint = DefaultS3Endpoint
	}
	u, err := url.Parse(endpoint)
	switch {
	case err != nil || u.Host == "":
		return "", false, errors.New("storage: the S3 endpoint must be http(s)://host[:port]")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, errors.New("storage: the S3 endpoint must be an http:// or https:// URL")
	case u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
		return "", false, errors.New("storage: the S3 endpoint must have no credentials, path, query or fragment (http(s)://host[:port])")
	}
	return u.Host, u.Scheme == "https", nil
}

func bucketLookup(l Lookup) (minio.BucketLookupType, error) {
	switch l {
	case "", LookupAuto:
		return minio.BucketLookupAuto, nil
	case LookupPath:
		return minio.BucketLookupPath, nil
	case LookupVirtual:
		return minio.BucketLookupDNS, nil
	}
	return 0, fmt.Errorf("storage: bucket lookup %q is not auto, path or virtual", l)
}

// bucketName is the S3 bucket naming rule (3 to 63 lower-case letters,
// digits, dots and hyphens, starting and ending with a letter or digit).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// CheckBucket reports whether name is a valid S3 bucket name.
func CheckBucket(name string) error {
	if !bucketName.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("storage: %q is not an S3 bucket name (3-63 of a-z 0-9 . -)", name)
	}
	return nil
}

// ParseS3URL splits s3://bucket[/prefix] into the bucket and the key prefix
// (without leading or trailing slash; "" when none).
func ParseS3URL(s string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", fmt.Errorf("storage: %q is not s3://bucket[/prefix]", s)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if err := CheckBucket(bucket); err != nil {
		return "", "", err
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		if err := checkPath(prefix); err != nil {
			return "", "", fmt.Errorf("storage: prefix of %q: %w", s, err)
		}
	}
	return bucket, prefix, nil
}

// Bucket is the bucket name; Prefix the key prefix ("" or ending in "/").
func (s *S3) Bucket() string { return s.bucket }

// Prefix is the key prefix inside the bucket ("" or ending in "/").
func (s *S3) Prefix() string { return s.prefix }

// Put uploads the blob. A reader that knows its length (bytes.Reader,
// bytes.Buffer, strings.Reader) is sent in one request; any other is
// streamed in parts of s3PartSize. S3 replaces objects atomically, so a
// reader never sees a partial blob.
func (s *S3) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if want := ContentTypeOf(key); contentType != want {
		return fmt.Errorf("storage: content type %q does not match key %q (%s)", contentType, key, want)
	}
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	opts := minio.PutObjectOptions{ContentType: contentType, PartSize: s3PartSize}
	if !strings.HasPrefix(key, PrivatePrefix) {
		opts.CacheControl = publicCacheControl
	}
	if _, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, size, opts); err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	return nil
}

// Open returns the blob; ErrNotFound when it is absent.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, string, error) {
	b, err := s.open(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return b.closer.(io.ReadCloser), b.contentType, nil
}

// open gets the object and its metadata (one request; the body is read
// lazily, with ranged requests after a Seek).
func (s *S3) open(ctx context.Context, key string) (blob, error) {
	if err := CheckKey(key); err != nil {
		return blob{}, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return blob{}, s.readErr(key, err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		return blob{}, s.readErr(key, err)
	}
	return blob{content: obj, closer: obj, contentType: ContentTypeOf(key), modTime: info.LastModified}, nil
}

// readErr maps a missing object to ErrNotFound.
func (s *S3) readErr(key string, err error) error {
	resp := minio.ToErrorResponse(err)
	if resp.Code == s3NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket" {
		return ErrNotFound
	}
	return fmt.Errorf("storage: open %s: %w", key, err)
}

// DeletePrefix removes every object whose key starts with prefix (a whole
// folder when prefix ends in "/"), listing and deleting in batches.
func (s *S3) DeletePrefix(ctx context.Context, prefix string) error {
	if err := checkPath(strings.TrimSuffix(prefix, "/")); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	listed := s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true})
	objs := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objs)
		for o := range listed {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			select {
			case objs <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range s.client.RemoveObjects(ctx, s.bucket, objs, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("%s: %w", strings.TrimPrefix(e.ObjectName, s.prefix), e.Err))
	}
	if listErr != nil {
		errs = append(errs, listErr)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: delete %s: %w", prefix, err)
	}
	return nil
}

// URL is a presigned GET URL of key when the store presigns, else baseURL +
// "/" + key with each segment escaped.
func (s *S3) URL(key string) string {
	if s.presign > 0 {
		// Signing is local (the region is always set): it fails only for
		// invalid names, which CheckKey rejects before any blob is stored.
		u, err := s.client.PresignedGetObject(context.Background(), s.bucket, s.prefix+key, s.presign, nil)
		if err == nil {
			return u.String()
		}
	}
	return joinURL(s.baseURL, key)
}

// Handler serves the bucket's public blobs (the API's /cdn/ route in front
// of a private bucket); see serveBlobs.
func (s *S3) Handler() http.Handler { return serveBlobs(s.open) }
