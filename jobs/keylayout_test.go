package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// TestMigrateKeys: keys of the first layout ("fashiond:…") in a running
// Redis are renamed to the Cluster-safe layout when a service opens it:
// values, TTLs and the webhook secret are kept, a job's stored
// Idempotency-Key name is rewritten, a key whose new name exists is left
// untouched (nothing lost), and a second start moves nothing.
func TestMigrateKeys(t *testing.T) {
	forBackends(t, func(t *testing.T, addr string) {
		ctx := context.Background()
		rc := redis.NewClient(&redis.Options{Addr: addr})
		defer rc.Close()
		const (
			id     = "0b5c3a2e-8f4e-4d1b-9a7c-2f3e4d5c6b7a"
			owner  = "ab12"
			secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		)
		idem := rdb.LegacyPrefix + "idem:" + owner + ":00ff"
		must(t, rc.Set(ctx, rdb.LegacyPrefix+"webhook_secret", secret, 0).Err())
		must(t, rc.Set(ctx, rdb.LegacyPrefix+"credits:"+owner, 42, 0).Err())
		must(t, rc.HSet(ctx, rdb.LegacyPrefix+"job:"+id, rdb.FieldID, id, rdb.FieldOwner, owner, rdb.FieldIdem, idem).Err())
		must(t, rc.PExpire(ctx, rdb.LegacyPrefix+"job:"+id, time.Hour).Err())
		must(t, rc.Set(ctx, idem, "done|f|"+id, time.Hour).Err())
		must(t, rc.LPush(ctx, rdb.LegacyPrefix+"ledger:"+owner, "old").Err())
		must(t, rc.LPush(ctx, rdb.KeyLedger(owner), "new").Err()) // conflict
		must(t, rc.Set(ctx, rdb.TaskKey(rdb.QueueName("tryon"), "x"), "asynq's", 0).Err())

		e := newEnv(t, addr, Options{})
		if got := e.svc.WebhookSecret(); got != secret {
			t.Errorf("webhook secret %q, want the migrated %q", got, secret)
		}
		if b, err := e.svc.Balance(ctx, owner); err != nil || b != 42 {
			t.Errorf("balance %d %v, want 42 from the old key", b, err)
		}
		if got := rc.HGet(ctx, rdb.KeyJob(id), rdb.FieldIdem).Val(); got != rdb.Prefix+"idem:"+owner+":00ff" {
			t.Errorf("job's idem field %q, want the new key name", got)
		}
		if ttl := rc.PTTL(ctx, rdb.KeyJob(id)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("job TTL %v after the rename, want (0, 1h]", ttl)
		}
		if rc.Exists(ctx, rdb.Prefix+"idem:"+owner+":00ff").Val() != 1 {
			t.Error("the idempotency key was not renamed")
		}
		if got := rc.LRange(ctx, rdb.LegacyPrefix+"ledger:"+owner, 0, -1).Val(); len(got) != 1 || got[0] != "old" {
			t.Errorf("conflicting old ledger %q, want it left in place", got)
		}
		if got := rc.LRange(ctx, rdb.KeyLedger(owner), 0, -1).Val(); len(got) != 1 || got[0] != "new" {
			t.Errorf("new ledger %q, want it untouched", got)
		}
		if rc.Get(ctx, rdb.TaskKey(rdb.QueueName("tryon"), "x")).Val() != "asynq's" {
			t.Error("an asynq key was touched")
		}
		left := rc.Keys(ctx, rdb.LegacyPrefix+"*").Val()
		if len(left) != 1 {
			t.Errorf("old keys left %q, want only the conflicting ledger", left)
		}
		if rc.Exists(ctx, rdb.KeyMigrationLock).Val() != 0 {
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
