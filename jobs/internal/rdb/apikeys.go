package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// provisionScript creates a key record and its balance once.
// KEYS: keys hash, credits, ledger. ARGV: hash, record, credits, ledger entry.
var provisionScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[3])
if tonumber(ARGV[3]) ~= 0 then redis.call('LPUSH', KEYS[3], ARGV[4]) end
return 1`)

// ProvisionKey stores owner's API key record (JSON) with its first
// balance and grant, once: false when the key exists (its balance kept).
func (d *DB) ProvisionKey(ctx context.Context, owner string, record []byte, credits int64, ledger string) (bool, error) {
	n, err := provisionScript.Run(ctx, d.c, []string{KeyAPIKeys, KeyCredits(owner), KeyLedger(owner)},
		owner, record, credits, ledger).Int()
	return n == 1, err
}

// addCreditsScript adds credits to an existing owner and records a grant.
var addCreditsScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return redis.error_reply('unknown key') end
local b = redis.call('INCRBY', KEYS[2], ARGV[2])
redis.call('LPUSH', KEYS[3], ARGV[3])
redis.call('LTRIM', KEYS[3], 0, 9999)
return b`)

// AddCredits adds n credits (negative removes) to a known owner with its
// ledger entry and returns the new balance.
func (d *DB) AddCredits(ctx context.Context, owner string, n int64, ledger string) (int64, error) {
	return addCreditsScript.Run(ctx, d.c, []string{KeyAPIKeys, KeyCredits(owner), KeyLedger(owner)},
		owner, n, ledger).Int64()
}
