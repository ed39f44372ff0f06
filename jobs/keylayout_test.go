package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMigrateKeys: keys of the first layout ("fashiond:…") in a running
// Redis are renamed to the Cluster-safe layout when a service opens it:
// values, TTLs and the webhook secret are kept, a job's stored
// Idempotency-Key name is rewritten, a key whose new name exists is left
// untouched (nothing lost), and a second start moves nothing.
func TestMigrateKeys(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		const (
			id     = "0b5c3a2e-8f4e-4d1b-9a7c-2f3e4d5c6b7a"
			owner  = "ab12"
			secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		)
		idem := legacyPrefix + "idem:" + owner + ":00ff"
		must(t, rdb.Set(ctx, legacyPrefix+"webhook_secret", secret, 0).Err())
		must(t, rdb.Set(ctx, legacyPrefix+"credits:"+owner, 42, 0).Err())
		must(t, rdb.HSet(ctx, legacyPrefix+"job:"+id, fID, id, fOwner, owner, fIdem, idem).Err())
		must(t, rdb.PExpire(ctx, legacyPrefix+"job:"+id, time.Hour).Err())
		must(t, rdb.Set(ctx, idem, "done|f|"+id, time.Hour).Err())
		must(t, rdb.LPush(ctx, legacyPrefix+"ledger:"+owner, "old").Err())
		must(t, rdb.LPush(ctx, keyLedger(owner), "new").Err()) // conflict
		must(t, rdb.Set(ctx, "asynq:{fashiond:tryon}:x", "asynq's", 0).Err())

		e := newEnv(t, addr, Options{})
		if got := e.svc.WebhookSecret(); got != secret {
			t.Errorf("webhook secret %q, want the migrated %q", got, secret)
		}
		if b, err := e.svc.Balance(ctx, owner); err != nil || b != 42 {
			t.Errorf("balance %d %v, want 42 from the old key", b, err)
		}
		if got := rdb.HGet(ctx, keyJob(id), fIdem).Val(); got != keyPrefix+"idem:"+owner+":00ff" {
			t.Errorf("job's idem field %q, want the new key name", got)
		}
		if ttl := rdb.PTTL(ctx, keyJob(id)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("job TTL %v after the rename, want (0, 1h]", ttl)
		}
		if rdb.Exists(ctx, keyPrefix+"idem:"+owner+":00ff").Val() != 1 {
			t.Error("the idempotency key was not renamed")
		}
		if got := rdb.LRange(ctx, legacyPrefix+"ledger:"+owner, 0, -1).Val(); len(got) != 1 || got[0] != "old" {
			t.Errorf("conflicting old ledger %q, want it left in place", got)
		}
		if got := rdb.LRange(ctx, keyLedger(owner), 0, -1).Val(); len(got) != 1 || got[0] != "new" {
			t.Errorf("new ledger %q, want it untouched", got)
		}
		if rdb.Get(ctx, "asynq:{fashiond:tryon}:x").Val() != "asynq's" {
			t.Error("an asynq key was touched")
		}
		left := rdb.Keys(ctx, legacyPrefix+"*").Val()
		if len(left) != 1 {
			t.Errorf("old keys left %q, want only the conflicting ledger", left)
		}
		if rdb.Exists(ctx, migrateLock).Val() != 0 {
			t.Error("the migration lock was not released")
		}
		e2 := newEnv(t, addr, Options{})
		if b, _ := e2.svc.Balance(ctx, owner); b != 42 {
			t.Errorf("balance after a second start %d, want 42", b)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
