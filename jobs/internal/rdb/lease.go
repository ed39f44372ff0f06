package rdb

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// expireLeaseScript expires one task's asynq lease (score 0, which asynq's
// recoverer treats as expired) only while it is still stale, so a lease
// extended since it was read is left alone. KEYS: lease set. ARGV: stale
// lease score (unix s), task id. One key: safe on Redis Cluster, where the
// lease set (asynq's slot) and the service's keys ({fashiond}) differ.
var expireLeaseScript = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[2])
if s and tonumber(s) > 0 and tonumber(s) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], 'XX', 0, ARGV[2])
  return 1
end
return 0`)

// StaleLeases lists the tasks of queue whose lease (LeaseKey) is set and
// older than stale (unix s).
func (d *DB) StaleLeases(ctx context.Context, queue string, stale int64) ([]string, error) {
	return d.c.ZRangeByScore(ctx, LeaseKey(queue), &redis.ZRangeBy{Min: "(0", Max: "(" + strconv.FormatInt(stale, 10)}).Result()
}

// ExpireLease expires task id's lease in queue while it is still older
// than stale (see expireLeaseScript); false when it was extended.
func (d *DB) ExpireLease(ctx context.Context, queue, id string, stale int64) (bool, error) {
	n, err := expireLeaseScript.Run(ctx, d.c, []string{LeaseKey(queue)}, stale, id).Int()
	return n == 1, err
}

// LeaseScore is task id's lease expiry in queue (unix s).
func (d *DB) LeaseScore(ctx context.Context, queue, id string) (float64, error) {
	return d.c.ZScore(ctx, LeaseKey(queue), id).Result()
}
