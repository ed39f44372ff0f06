package rdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Tuning of the one-time key migration.
const (
	migrateLockTTL   = 2 * time.Minute        // a crashed migration frees it
	migrateLockPoll  = 100 * time.Millisecond // how often a waiting process looks
	migrateScanCount = 1000                   // SCAN's COUNT hint
)

// releaseScript deletes the migration lock if this process still holds it.
// KEYS: lock. ARGV: token.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// MigrateKeys renames every key of the first layout ("fashiond:…") to the
// current one ("{fashiond}:…"), keeping values and TTLs (RENAMENX), and
// rewrites the one stored key name (a job's Idempotency-Key, field idem).
// A key whose new name already exists is left where it is and reported:
// nothing is overwritten or dropped. One process migrates at a time (a
// lock in Redis); the others wait, then find nothing left to move. With
// no old keys this is one SCAN of the database.
func (d *DB) MigrateKeys(ctx context.Context, log *slog.Logger) error {
	token := uuid.NewString()
	if err := d.lockMigration(ctx, token); err != nil {
		return err
	}
	defer releaseScript.Run(context.WithoutCancel(ctx), d.c, []string{KeyMigrationLock}, token)
	moved, kept := 0, 0
	err := d.forEachKey(ctx, LegacyPrefix+"*", func(k string) error {
		ok, err := d.migrateKey(ctx, k)
		if ok {
			moved++
		} else if err == nil {
			kept++
		}
		return err
	})
	if err != nil {
		return err
	}
	if moved > 0 {
		log.Info("renamed Redis keys to the Cluster-safe layout", "from", LegacyPrefix+"*", "to", Prefix+"*", "keys", moved)
	}
	if kept > 0 {
		log.Error("old-layout Redis keys were left in place: a key with the new name exists (was an old fashiond still running?); inspect SCAN MATCH fashiond:* and merge them by hand", "keys", kept)
	}
	return nil
}

// lockMigration takes the migration lock, waiting while another process
// holds it.
func (d *DB) lockMigration(ctx context.Context, token string) error {
	deadline := time.Now().Add(migrateLockTTL)
	for {
		ok, err := d.c.SetNX(ctx, KeyMigrationLock, token, migrateLockTTL).Result()
		if err != nil {
			return fmt.Errorf("jobs: key migration lock: %w", err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("jobs: key migration: another process has held the lock for too long")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(migrateLockPoll):
		}
	}
}

// forEachKey calls fn with every key matching pattern, one call at a
// time. On a Redis Cluster each master holds only its own slots, so SCAN
// runs on every master; elsewhere on the one server.
func (d *DB) forEachKey(ctx context.Context, pattern string, fn func(key string) error) error {
	cc, ok := d.c.(*redis.ClusterClient)
	if !ok {
		return scanNode(ctx, d.c, pattern, fn)
	}
	var mu sync.Mutex
	return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return scanNode(ctx, node, pattern, func(k string) error {
			mu.Lock()
			defer mu.Unlock()
			return fn(k)
		})
	})
}

// scanNode SCANs one server for pattern.
func scanNode(ctx context.Context, c redis.Cmdable, pattern string, fn func(key string) error) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, migrateScanCount).Result()
		if err != nil {
			return fmt.Errorf("jobs: key migration: %w", err)
		}
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// renameNX is RENAMENX, also across Cluster slots: on a Redis Cluster an
// old key and its new name are in different slots (different hash tags),
// which RENAMENX refuses, so the key is copied with DUMP and RESTORE (the
// remaining TTL kept; refused, false, when the new name exists) and the
// old one deleted. That is not atomic: a crash between RESTORE and DEL
// leaves both, and the next start reports the old key as left in place.
func (d *DB) renameNX(ctx context.Context, old, name string) (bool, error) {
	if _, ok := d.c.(*redis.ClusterClient); !ok {
		return d.c.RenameNX(ctx, old, name).Result()
	}
	dump, err := d.c.Dump(ctx, old).Result()
	if err != nil {
		return false, err
	}
	ttl, err := d.c.PTTL(ctx, old).Result()
	if err != nil {
		return false, err
	}
	if ttl < 0 {
		ttl = 0 // -1: no TTL (RESTORE's 0)
	}
	if err := d.c.Restore(ctx, name, ttl, dump).Err(); err != nil {
		if strings.HasPrefix(err.Error(), "BUSYKEY") {
			return false, nil
		}
		return false, err
	}
	return true, d.c.Del(ctx, old).Err()
}

// migrateKey moves one old key; false when its new name was taken.
func (d *DB) migrateKey(ctx context.Context, old string) (bool, error) {
	name := newKeyName(old)
	ok, err := d.renameNX(ctx, old, name)
	if err != nil {
		return false, fmt.Errorf("jobs: key migration: rename a %s key: %w", keyKind(old), err)
	}
	if !ok || !strings.HasPrefix(name, KeyJobPrefix) {
		return ok, nil
	}
	idem, err := d.c.HGet(ctx, name, FieldIdem).Result()
	if err == nil && strings.HasPrefix(idem, LegacyPrefix) {
		err = d.c.HSet(ctx, name, FieldIdem, newKeyName(idem)).Err()
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return true, fmt.Errorf("jobs: key migration: a job's idempotency key: %w", err)
	}
	return true, nil
}

// newKeyName is the current name of an old-layout key.
func newKeyName(old string) string { return Prefix + strings.TrimPrefix(old, LegacyPrefix) }

// keyKind is the first segment after the prefix ("job", "credits"), for
// error messages that must not show owners or ids.
func keyKind(k string) string {
	kind, _, _ := strings.Cut(strings.TrimPrefix(k, LegacyPrefix), ":")
	return kind
}
