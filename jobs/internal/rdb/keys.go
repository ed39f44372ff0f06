// Package rdb is the job system's Redis layer, the one door to Redis of
// package jobs (as asynq keeps its own in internal/rdb): every key name
// (keys.go), the names of asynq's own keys that jobs reads and writes
// (asynq.go, pinned to the asynq version in go.mod), every Lua script, the
// parsing of a job's record hash (record.go) and the one-time key-layout
// migration (keylayout.go). Credits, job records and Idempotency-Keys
// change together in one Lua script per transition (submit.go,
// transitions.go), so a crash never leaves one without the other.
//
// Scripts are run through DB's methods, each taking a structured argument
// and returning a typed result; simple reads and writes go through
// DB.Client with the key names of this package. No other package writes a
// key name or a Lua script (TestOnlyRedisLayerSpeaksRedis).
package rdb

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DB is the job system's view of Redis.
type DB struct{ c redis.UniversalClient }

// New wraps a client; DB never closes it.
func New(c redis.UniversalClient) *DB { return &DB{c: c} }

// Client is the underlying client, for plain commands on the keys named
// here and for asynq.
func (d *DB) Client() redis.UniversalClient { return d.c }

// Prefix starts every key the job system keeps. Its hash tag {fashiond}
// puts every key in one Redis Cluster hash slot, so each multi-key Lua
// script's keys are always on one node (see docs/OPERATIONS.md, "Redis
// Cluster"). Keys of the older layout (LegacyPrefix) are renamed once at
// start-up (DB.MigrateKeys).
const Prefix = "{fashiond}:"

// LegacyPrefix starts every key of the first key layout, before the Redis
// Cluster hash tag was added.
const LegacyPrefix = "fashiond:"

// Keys of one value each.
const (
	KeyJobPrefix     = Prefix + "job:"            // + job id: the job's hash (record.go)
	KeySecret        = Prefix + "webhook_secret"  // the operator's webhook signing secret
	KeyPathSecret    = Prefix + "path_secret"     // behind opaque owner ids in URLs
	KeyAPIKeys       = Prefix + "keys"            // hash: key hash -> API key record JSON
	KeyHookSecrets   = Prefix + "webhook_secrets" // hash: owner id -> per-key webhook secrets JSON
	KeyExpiry        = Prefix + "expiry"          // zset: job id -> expiry unix ms
	KeyActive        = Prefix + "active"          // zset: non-terminal job id -> created unix ms
	KeyWorkers       = Prefix + "workers"         // zset: worker id -> last beat unix ms
	KeyModels        = Prefix + "models"          // set: every model a worker ever advertised
	KeyBacklogs      = Prefix + "backlogs"        // set: BacklogMember of every non-empty backlog
	KeyRunningPrefix = Prefix + "running:"        // + worker id: the jobs it is running
	// KeyReplProbe is written right before WAIT, on WAIT's connection: WAIT
	// counts the replicas that acknowledged its connection's last write,
	// and the replication stream is ordered, so a replica that has the
	// probe has every write made before it, on any connection.
	KeyReplProbe     = Prefix + "repl_probe"
	KeyMigrationLock = Prefix + "migrating" // held by the process migrating the key layout
)

// Keys per job, owner, model or worker.
func KeyJob(id string) string           { return KeyJobPrefix + id }
func KeyCredits(owner string) string    { return Prefix + "credits:" + owner }
func KeyLedger(owner string) string     { return Prefix + "ledger:" + owner }
func KeyStudio(owner string) string     { return Prefix + "studio:" + owner }
func KeyOwnerJobs(owner string) string  { return Prefix + "owner_jobs:" + owner }
func KeyInflight(owner string) string   { return Prefix + "in_flight:" + owner }
func KeyLimits(owner string) string     { return Prefix + "limits:" + owner }
func KeyBucket(owner string) string     { return Prefix + "bucket:" + owner }
func KeyInputBytes(owner string) string { return Prefix + "input_bytes:" + owner }
func KeyServed(model string) string     { return Prefix + "served:" + model }
func KeySlots(model string) string      { return Prefix + "slots:" + model }
func KeyDurations(model string) string  { return Prefix + "durations:" + model }
func KeyWorker(id string) string        { return Prefix + "worker:" + id }
func KeyRunning(worker string) string   { return KeyRunningPrefix + worker }

// KeyDispatched is the set of owner's jobs of model in the model queue.
func KeyDispatched(model, owner string) string {
	return Prefix + "dispatched:" + model + ":" + owner
}

// KeyBacklog is owner's backlog of jobs of model (fair sharing).
func KeyBacklog(model, owner string) string { return Prefix + "backlog:" + model + ":" + owner }

// BacklogMember is the member of KeyBacklogs naming one backlog.
func BacklogMember(model, owner string) string { return model + "|" + owner }

// ParseBacklogMember splits a member of KeyBacklogs.
func ParseBacklogMember(m string) (model, owner string, ok bool) { return strings.Cut(m, "|") }

// KeyIdem is the key of owner's Idempotency-Key k (hashed: a client's key
// is never a Redis key name).
func KeyIdem(owner, k string) string {
	h := sha256.Sum256([]byte(k))
	return Prefix + "idem:" + owner + ":" + hex.EncodeToString(h[:16])
}

// KeyQueueProbe is the replication probe of a model queue's shard on a
// Redis Cluster: asynq keeps a queue's keys under the hash tag {<queue>},
// so this key lies in their slot, on the master that took the job's task.
func KeyQueueProbe(queue string) string { return "{" + queue + "}:repl_probe" }

// EventsPrefix starts a job's event channel; the payload is a short word
// ("running", "progress", "dispatched" or the new status). The scripts
// publish on it in the same step as each change.
const EventsPrefix = "fashiond:events:"

// Limits hash fields (KeyLimits): the per-key overrides.
const (
	LimitRate        = "rate"
	LimitBurst       = "burst"
	LimitMaxInFlight = "max_in_flight"
	LimitDispatch    = "dispatch"
)
