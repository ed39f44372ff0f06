package jobs

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// DefaultSecretOverlap is how long a rotated-out per-key webhook secret
// still signs deliveries next to the new one.
const DefaultSecretOverlap = 24 * time.Hour

// hookSecrets are an API key's webhook signing secrets: the current one
// and, until PrevUntil, the one it replaced.
type hookSecrets struct {
	Current   string `json:"current"`
	Previous  string `json:"previous,omitempty"`
	PrevUntil int64  `json:"prev_until,omitempty"` // unix ms
}

func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// ownerSecrets returns owner's webhook secrets, creating the first one when
// the key has none yet (HSETNX: concurrent callers agree on one).
func (s *Service) ownerSecrets(ctx context.Context, owner string) (hookSecrets, error) {
	var hs hookSecrets
	v, err := s.rdb.HGet(ctx, rdb.KeyHookSecrets, owner).Result()
	if errors.Is(err, redis.Nil) {
		fresh, err := newSecret()
		if err != nil {
			return hs, err
		}
		rec, _ := json.Marshal(hookSecrets{Current: fresh})
		if err := s.rdb.HSetNX(ctx, rdb.KeyHookSecrets, owner, rec).Err(); err != nil {
			return hs, fmt.Errorf("jobs: webhook secret: %w", err)
		}
		v, err = s.rdb.HGet(ctx, rdb.KeyHookSecrets, owner).Result()
		if err != nil {
			return hs, fmt.Errorf("jobs: webhook secret: %w", err)
		}
	} else if err != nil {
		return hs, fmt.Errorf("jobs: webhook secret: %w", err)
	}
	if err := json.Unmarshal([]byte(v), &hs); err != nil || hs.Current == "" {
		return hs, fmt.Errorf("jobs: webhook secret of a key is unreadable")
	}
	return hs, nil
}

// signingKeys are the decoded secrets that sign owner's webhooks now: the
// key's current secret, its previous one during the rotation overlap, and
// the operator secret (see Options.WebhookSecret).
func (s *Service) signingKeys(ctx context.Context, owner string) ([][]byte, error) {
	hs, err := s.ownerSecrets(ctx, owner)
	if err != nil {
		return nil, err
	}
	secrets := []string{hs.Current}
	if hs.Previous != "" && nowMS() < hs.PrevUntil {
		secrets = append(secrets, hs.Previous)
	}
	keys := make([][]byte, 0, len(secrets)+1)
	for _, sec := range secrets {
		k, err := decodeSecret(sec)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return append(keys, s.secret), nil
}

// KeyWebhookSecret returns the webhook signing secret of the key whose ID
// (see ListKeys) is keyID, creating it on first use. With rotate, a new
// secret replaces it; the old one keeps signing (a second signature in
// webhook-signature) for overlap (DefaultSecretOverlap when 0).
func (s *Service) KeyWebhookSecret(ctx context.Context, keyID string, rotate bool, overlap time.Duration) (string, error) {
	owner, err := s.resolveKeyID(ctx, keyID)
	if err != nil {
		return "", err
	}
	hs, err := s.ownerSecrets(ctx, owner)
	if err != nil || !rotate {
		return hs.Current, err
	}
	if overlap <= 0 {
		overlap = DefaultSecretOverlap
	}
	fresh, err := newSecret()
	if err != nil {
		return "", err
	}
	rec, _ := json.Marshal(hookSecrets{Current: fresh, Previous: hs.Current, PrevUntil: time.Now().Add(overlap).UnixMilli()})
	if err := s.rdb.HSet(ctx, rdb.KeyHookSecrets, owner, rec).Err(); err != nil {
		return "", fmt.Errorf("jobs: rotate webhook secret: %w", err)
	}
	return fresh, nil
}

// resolveKeyID maps a key ID (a prefix of at least 8 hex digits of the
// owner id, as ListKeys shows) to its owner id.
func (s *Service) resolveKeyID(ctx context.Context, keyID string) (string, error) {
	keyID = strings.ToLower(keyID)
	if len(keyID) < 8 {
		return "", errors.New("jobs: key id needs at least 8 hex digits")
	}
	owners, err := s.rdb.HKeys(ctx, rdb.KeyAPIKeys).Result()
	if err != nil {
		return "", fmt.Errorf("jobs: keys: %w", err)
	}
	var match []string
	for _, o := range owners {
		if strings.HasPrefix(o, keyID) {
			match = append(match, o)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("jobs: no key with id %s", keyID)
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("jobs: key id %s is ambiguous (%d keys)", keyID, len(match))
}
