package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// promoteScript moves jobs of one key from its backlog to the dispatched
// set while the set is under the cap, dropping members that have ended.
// KEYS: dispatched, backlog, backlogs, limits. ARGV: default cap, job key
// prefix, backlog member. Returns the ids to enqueue.
var promoteScript = redis.NewScript(`
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('HGET', ARGV[2] .. id, 'status') ~= 'starting' then redis.call('SREM', KEYS[1], id) end
end
local cap = tonumber(redis.call('HGET', KEYS[4], 'dispatch') or ARGV[1])
local out = {}
while redis.call('SCARD', KEYS[1]) < cap do
  local id = redis.call('LPOP', KEYS[2])
  if not id then break end
  if redis.call('HGET', ARGV[2] .. id, 'status') == 'starting' then
    redis.call('SADD', KEYS[1], id)
    redis.call('HDEL', ARGV[2] .. id, 'held')
    redis.call('PUBLISH', 'fashiond:events:' .. id, 'dispatched')
    table.insert(out, id)
  end
end
if redis.call('LLEN', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[3]) end
return out`)

// Promote moves owner's backlogged jobs of model to the dispatched set
// while it holds fewer than its cap (the owner's dispatch limit, else
// defaultCap) and returns the ids to enqueue.
func (d *DB) Promote(ctx context.Context, model, owner string, defaultCap int) ([]string, error) {
	return promoteScript.Run(ctx, d.c,
		[]string{KeyDispatched(model, owner), KeyBacklog(model, owner), KeyBacklogs, KeyLimits(owner)},
		defaultCap, KeyJobPrefix, BacklogMember(model, owner)).StringSlice()
}
