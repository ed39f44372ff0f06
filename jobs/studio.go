package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
	"fashiond/pipelines"
	"fashiond/storage"
)

var _ pipelines.Studio = Studio{}

// Studio is the pipelines.Studio of a Service (Service itself cannot be one:
// its Get is Backend's). Get it with Service.Studio.
type Studio struct{ s *Service }

// Studio returns the studio view of s for pipelines.Request.Studio.
func (s *Service) Studio() Studio { return Studio{s} }

// studioKey is the blob key of a saved model's image:
// studio/<opaque owner id>/<id>.png. The opaque id is an HMAC of the owner
// id under the service's path secret, so the public URL carries nothing
// derived from the API key alone (no offline guessing of weak keys).
func (s *Service) studioKey(owner, id string) string {
	return "studio/" + s.OpaqueOwner(owner) + "/" + id + ".png"
}

// legacyStudioKey is where saved models stored before opaque owner ids
// keep their image (the owner id's first 16 hex digits).
func legacyStudioKey(owner, id string) string {
	return "studio/" + owner[:min(len(owner), 16)] + "/" + id + ".png"
}

// opaqueOwnerLen is the number of hex digits of an opaque owner id.
const opaqueOwnerLen = 24

// OpaqueOwner is the owner's id in public paths: HMAC-SHA256 of the owner
// id under the service's path secret (kept in Redis), in hex, shortened.
func (s *Service) OpaqueOwner(owner string) string {
	m := hmac.New(sha256.New, s.pathSecret)
	m.Write([]byte("fashiond-owner-path\x00" + owner))
	return hex.EncodeToString(m.Sum(nil))[:opaqueOwnerLen]
}

// Save stores a saved model of owner: the image as PNG in the blob store
// under studio/<owner prefix>/<id>.png and the record in Redis. Saved
// models do not expire.
func (st Studio) Save(ctx context.Context, owner string, m pipelines.SavedModel, img image.Image) (pipelines.SavedModel, error) {
	s := st.s
	if owner == "" || img == nil {
		return m, errors.New("jobs: studio save needs an owner and an image")
	}
	if m.ID == "" {
		m.ID = uuid.NewString()
	} else if !validID(m.ID) {
		return m, fmt.Errorf("jobs: studio id %q is not a UUID", m.ID)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	b := img.Bounds()
	m.Width, m.Height = b.Dx(), b.Dy()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return m, fmt.Errorf("jobs: studio image: %w", err)
	}
	key := s.studioKey(owner, m.ID)
	if err := s.store.Put(ctx, key, "image/png", &buf); err != nil {
		return m, fmt.Errorf("jobs: studio image: %w", err)
	}
	m.ImageURL = blobRef + key // the record keeps the key; readers get a URL made then
	rec, _ := json.Marshal(m)
	if err := s.rdb.HSet(ctx, rdb.KeyStudio(owner), m.ID, rec).Err(); err != nil {
		return m, fmt.Errorf("jobs: studio: %w", err)
	}
	m.ImageURL = s.blobURL(m.ImageURL)
	return m, nil
}

// Get returns a saved model of owner and its image; ErrNotFound when
// absent.
func (st Studio) Get(ctx context.Context, owner, id string) (pipelines.SavedModel, image.Image, error) {
	s := st.s
	m, err := s.GetSaved(ctx, owner, id)
	if err != nil {
		return m, nil, err
	}
	rc, _, err := s.store.Open(ctx, s.studioKey(owner, m.ID))
	if errors.Is(err, storage.ErrNotFound) {
		rc, _, err = s.store.Open(ctx, legacyStudioKey(owner, m.ID))
	}
	if errors.Is(err, storage.ErrNotFound) {
		return m, nil, fmt.Errorf("saved model %s: image missing: %w", id, ErrNotFound)
	}
	if err != nil {
		return m, nil, err
	}
	defer rc.Close()
	img, err := png.Decode(rc)
	if err != nil {
		return m, nil, fmt.Errorf("jobs: saved model %s image: %w", id, err)
	}
	return m, img, nil
}

// GetSaved returns a saved model record of owner; ErrNotFound when
// absent.
func (s *Service) GetSaved(ctx context.Context, owner, id string) (pipelines.SavedModel, error) {
	var m pipelines.SavedModel
	if !validID(id) {
		return m, ErrNotFound
	}
	v, err := s.rdb.HGet(ctx, rdb.KeyStudio(owner), id).Result()
	if errors.Is(err, redis.Nil) {
		return m, ErrNotFound
	}
	if err != nil {
		return m, fmt.Errorf("jobs: studio: %w", err)
	}
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return m, fmt.Errorf("jobs: studio record %s: %w", id, err)
	}
	m.ImageURL = s.blobURL(m.ImageURL)
	return m, nil
}

// ListSaved lists owner's saved models, newest first.
func (s *Service) ListSaved(ctx context.Context, owner string) ([]pipelines.SavedModel, error) {
	all, err := s.rdb.HGetAll(ctx, rdb.KeyStudio(owner)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: studio: %w", err)
	}
	out := make([]pipelines.SavedModel, 0, len(all))
	for _, v := range all {
		var m pipelines.SavedModel
		if json.Unmarshal([]byte(v), &m) == nil {
			m.ImageURL = s.blobURL(m.ImageURL)
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
