package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// KeyPrefix starts every key CreateKey makes.
const KeyPrefix = "fsk_"

// KeyInfo describes an API key without revealing it.
type KeyInfo struct {
	ID        string    `json:"id"` // first 12 hex digits of the key's SHA-256 (the owner id's prefix)
	Owner     string    `json:"owner"`
	Label     string    `json:"label"`
	Credits   int64     `json:"credits"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is when the key was revoked (nil: it is valid).
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// LedgerEntry is one credit movement of an owner.
type LedgerEntry struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"` // charge, refund, grant
	Job     string    `json:"job,omitempty"`
	Model   string    `json:"model,omitempty"`
	Credits int64     `json:"credits"` // signed: a charge is negative
}

type keyRecord struct {
	Hash      string     `json:"hash"`
	Label     string     `json:"label"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"` // nil: valid
}

// OwnerOf is the owner id of a raw key: the hex SHA-256 of the key. Only
// this hash is stored.
func OwnerOf(rawKey string) string {
	h := sha256.Sum256([]byte(rawKey))
	return hex.EncodeToString(h[:])
}

// CreateKey makes a random key ("fsk_" + 32 random bytes in base64url) with
// credits and returns it. The raw key is shown once and never stored.
func (s *Service) CreateKey(ctx context.Context, label string, credits int64) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	raw := KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	if _, err := s.provision(ctx, raw, label, credits); err != nil {
		return "", err
	}
	return raw, nil
}

// ProvisionKey registers rawKey with credits when it is new (for
// FASHIOND_API_KEYS). A key that already exists keeps its balance, so a
// restart never adds credits again. created reports whether it was new.
func (s *Service) ProvisionKey(ctx context.Context, rawKey string, credits int64) (created bool, err error) {
	if len(rawKey) < 8 {
		return false, errors.New("jobs: an API key needs at least 8 characters")
	}
	return s.provision(ctx, rawKey, "provisioned", credits)
}

func (s *Service) provision(ctx context.Context, raw, label string, credits int64) (bool, error) {
	if credits < 0 {
		return false, errors.New("jobs: credits must not be negative")
	}
	owner := OwnerOf(raw)
	rec, _ := json.Marshal(keyRecord{Hash: owner, Label: label, CreatedAt: time.Now().UTC()})
	entry := ledgerJSON("grant", "", "", credits)
	created, err := s.db.ProvisionKey(ctx, owner, rec, credits, entry)
	if err != nil {
		return false, fmt.Errorf("jobs: provision key: %w", err)
	}
	return created, nil
}

// Authenticate maps a raw key to its owner id; ErrUnauthorized for unknown
// and revoked keys. The stored hash is compared in constant time.
func (s *Service) Authenticate(ctx context.Context, key string) (string, error) {
	if key == "" || len(key) > 512 {
		return "", ErrUnauthorized
	}
	owner := OwnerOf(key)
	v, err := s.rdb.HGet(ctx, rdb.KeyAPIKeys, owner).Result()
	if errors.Is(err, redis.Nil) {
		return "", ErrUnauthorized
	}
	if err != nil {
		return "", fmt.Errorf("jobs: authenticate: %w", err)
	}
	var rec keyRecord
	if json.Unmarshal([]byte(v), &rec) != nil || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(owner)) != 1 || rec.RevokedAt != nil {
		return "", ErrUnauthorized
	}
	return owner, nil
}

// ErrKeyRevoked is RevokeKey's error for a key that is already revoked.
var ErrKeyRevoked = errors.New("already revoked")

// revokeRetries bounds RevokeKey's optimistic transaction when the keys
// hash changes under it.
const revokeRetries = 5

// RevokeKey revokes the key whose ID (a prefix of at least 8 hex digits of
// its owner id, as in ListKeys) is keyID: from then on Authenticate refuses
// it. Its credits, jobs and saved models are kept, unusable. Revoking is
// final; a revoked key's raw value provisioned again (FASHIOND_API_KEYS)
// stays revoked. It returns the key as revoked; ErrKeyRevoked when it
// already was.
func (s *Service) RevokeKey(ctx context.Context, keyID string) (KeyInfo, error) {
	owner, err := s.resolveKeyID(ctx, keyID)
	if err != nil {
		return KeyInfo{}, err
	}
	var rec keyRecord
	txf := func(tx *redis.Tx) error {
		v, err := tx.HGet(ctx, rdb.KeyAPIKeys, owner).Result()
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			return fmt.Errorf("key record %s: %w", owner[:12], err)
		}
		if rec.RevokedAt != nil {
			return ErrKeyRevoked
		}
		now := time.Now().UTC()
		rec.RevokedAt = &now
		b, _ := json.Marshal(rec)
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, rdb.KeyAPIKeys, owner, b)
			return nil
		})
		return err
	}
	for range revokeRetries {
		err = s.rdb.Watch(ctx, txf, rdb.KeyAPIKeys)
		if !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	switch {
	case errors.Is(err, ErrKeyRevoked):
		return KeyInfo{}, fmt.Errorf("key %s: %w (at %s)", owner[:12], ErrKeyRevoked, rec.RevokedAt.Format(time.RFC3339))
	case err != nil:
		return KeyInfo{}, fmt.Errorf("jobs: revoke key: %w", err)
	}
	bal, err := s.Balance(ctx, owner)
	if err != nil {
		return KeyInfo{}, err
	}
	return KeyInfo{ID: owner[:12], Owner: owner, Label: rec.Label, Credits: bal, CreatedAt: rec.CreatedAt, RevokedAt: rec.RevokedAt}, nil
}

// ListKeys lists the keys, oldest first.
func (s *Service) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	all, err := s.rdb.HGetAll(ctx, rdb.KeyAPIKeys).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: list keys: %w", err)
	}
	var out []KeyInfo
	for owner, v := range all {
		var rec keyRecord
		if json.Unmarshal([]byte(v), &rec) != nil {
			continue
		}
		bal, err := s.Balance(ctx, owner)
		if err != nil {
			return nil, err
		}
		out = append(out, KeyInfo{ID: owner[:12], Owner: owner, Label: rec.Label, Credits: bal, CreatedAt: rec.CreatedAt, RevokedAt: rec.RevokedAt})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AddCredits adds n credits (negative removes) to the key whose ID (a
// prefix of at least 8 hex digits of its owner id) is keyID and returns the
// new balance.
func (s *Service) AddCredits(ctx context.Context, keyID string, n int64) (int64, error) {
	owner, err := s.resolveKeyID(ctx, keyID)
	if err != nil {
		return 0, err
	}
	b, err := s.db.AddCredits(ctx, owner, n, ledgerJSON("grant", "", "", n))
	if err != nil {
		return 0, fmt.Errorf("jobs: add credits: %w", err)
	}
	return b, nil
}

// Balance is owner's credit balance (0 for unknown owners).
func (s *Service) Balance(ctx context.Context, owner string) (int64, error) {
	b, err := s.rdb.Get(ctx, rdb.KeyCredits(owner)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("jobs: balance: %w", err)
	}
	return b, nil
}

// Ledger returns owner's newest n credit movements, newest first (the list
// keeps the last 10000).
func (s *Service) Ledger(ctx context.Context, owner string, n int) ([]LedgerEntry, error) {
	if n <= 0 {
		n = 100
	}
	vals, err := s.rdb.LRange(ctx, rdb.KeyLedger(owner), 0, int64(n-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: ledger: %w", err)
	}
	out := make([]LedgerEntry, 0, len(vals))
	for _, v := range vals {
		var e LedgerEntry
		if json.Unmarshal([]byte(v), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

func ledgerJSON(kind, job, model string, credits int64) string {
	b, _ := json.Marshal(LedgerEntry{At: time.Now().UTC(), Kind: kind, Job: job, Model: model, Credits: credits})
	return string(b)
}
