package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
	"fashiond/jobs/redistest"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// crc16 is CRC16-XMODEM (polynomial 0x1021, initial 0), the checksum the
// Redis Cluster specification maps keys to slots with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is the Cluster slot of a key: of its hash tag (the text between
// the first '{' and the next '}', if not empty), else of the whole key.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key))) % clusterSlots
}

// TestKeySlot checks the slot function against the Cluster specification's
// examples and CLUSTER KEYSLOT answers of a real cluster.
func TestKeySlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (the spec's check value)", got)
	}
	tests := []struct {
		key  string
		slot int
	}{
		{"foo", 12182},
		{"somekey", 11058},
		{"{user1000}.following", keySlot("user1000")},
		{"foo{}{bar}", keySlot("foo{}{bar}")}, // empty tag: the whole key
		{"foo{{bar}}zap", keySlot("{bar")},
		{"foo{bar}{zap}", keySlot("bar")},
		{rdb.KeyJob("0b5c3a2e-8f4e-4d1b-9a7c-2f3e4d5c6b7a"), keySlot("fashiond")},
	}
	for _, tc := range tests {
		if got := keySlot(tc.key); got != tc.slot {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
	if keySlot("foo{}{bar}") == keySlot("bar") {
		t.Error("an empty hash tag must not select the next one")
	}
}

// scriptCall is one EVAL/EVALSHA seen on the wire, or one MULTI block.
type scriptCall struct {
	sha  string // the script's SHA-1 ("multi" for a transaction)
	keys []string
	argv []string
}

// wireLog records the scripts and transactions a client sends.
type wireLog struct {
	mu    sync.Mutex
	calls []scriptCall
}

func (l *wireLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *wireLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.record(cmd.Args())
		return next(ctx, cmd)
	}
}

func (l *wireLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && strings.EqualFold(cmds[0].Name(), "multi") {
			var keys []string
			for _, c := range cmds {
				if n := strings.ToLower(c.Name()); n != "multi" && n != "exec" && len(c.Args()) > 1 {
					keys = append(keys, strArg(c.Args()[1]))
				}
			}
			l.mu.Lock()
			l.calls = append(l.calls, scriptCall{sha: "multi", keys: keys})
			l.mu.Unlock()
		} else {
			for _, c := range cmds {
				l.record(c.Args())
			}
		}
		return next(ctx, cmds)
	}
}

// record keeps an EVAL or EVALSHA command's script, keys and arguments.
func (l *wireLog) record(args []any) {
	if len(args) < 3 {
		return
	}
	name := strings.ToLower(strArg(args[0]))
	if name != "eval" && name != "evalsha" {
		return
	}
	sha := strArg(args[1])
	if name == "eval" {
		h := sha1.Sum([]byte(sha))
		sha = hex.EncodeToString(h[:])
	}
	n, err := strconv.Atoi(strArg(args[2]))
	if err != nil || 3+n > len(args) {
		return
	}
	c := scriptCall{sha: sha}
	for _, a := range args[3 : 3+n] {
		c.keys = append(c.keys, strArg(a))
	}
	for _, a := range args[3+n:] {
		c.argv = append(c.argv, strArg(a))
	}
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
}

func strArg(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}

// TestScriptsOneSlot runs the service's whole job flow (keys, credits,
// submissions that succeed, fail, are cancelled and deleted, idempotency,
// rate limits) on a real redis-server through a client that records every
// Lua script and MULTI block, and fails if any of them spans two Redis
// Cluster hash slots, or passes a key name (or key prefix) as an argument
// outside the keys' slot. asynq's own scripts (every key "asynq:…") are
// asynq's business and skipped. It also fails when a script of the service
// was never run, so a new script cannot slip past it.
func TestScriptsOneSlot(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rc.Close() })
	wire := &wireLog{}
	rc.AddHook(wire)
	e := newEnv(t, addr, Options{Redis: rc})
	runJobFlow(t, ctx, e)

	// rollback runs only when an enqueue fails (its keys are a subset of
	// submit's, checked below); expireLease's one key is asynq's.
	want := rdb.Scripts()
	delete(want, "rollback")
	delete(want, "expireLease")
	seen := map[string]bool{}
	tagSlot := keySlot(rdb.Prefix)
	wire.mu.Lock()
	defer wire.mu.Unlock()
	for _, c := range wire.calls {
		if allAsynq(c.keys) {
			continue
		}
		seen[c.sha] = true
		for _, k := range c.keys {
			if keySlot(k) != tagSlot {
				t.Errorf("script %s: key %q is in slot %d, the service's keys in %d (keys %q)", c.sha[:8], k, keySlot(k), tagSlot, c.keys)
			}
		}
		for _, a := range c.argv {
			if looksLikeKey(a) && keySlot(a) != tagSlot {
				t.Errorf("script %s passes the key name %q as an argument outside the slot", c.sha[:8], a)
			}
		}
	}
	for name, sha := range want {
		if !seen[sha] {
			t.Errorf("the %s script never ran in the flow: the test does not cover it", name)
		}
	}
	if !seen["multi"] {
		t.Error("no MULTI block ran in the flow")
	}
	// Rollback touches a subset of Submit's keys.
	sub := rdb.Submission{Job: rdb.NewJob{ID: "0b5c3a2e-8f4e-4d1b-9a7c-2f3e4d5c6b7a", Owner: e.owner, Model: "m"}, IdempotencyKey: "k"}
	for _, key := range sub.Keys() {
		if keySlot(key) != tagSlot {
			t.Errorf("rollback key %q is in slot %d, not %d", key, keySlot(key), tagSlot)
		}
	}
}

// keyLike matches a key name or key prefix with a hash tag ("{x}:…").
var keyLike = regexp.MustCompile(`^\{[^{}"]*\}:`)

// looksLikeKey reports whether a script argument is a key name or prefix
// (of the current layout, or of the old one, "fashiond:…").
func looksLikeKey(a string) bool {
	return keyLike.MatchString(a) || strings.HasPrefix(a, rdb.LegacyPrefix)
}

// allAsynq reports whether every key is one of asynq's.
func allAsynq(keys []string) bool {
	for _, k := range keys {
		if !strings.HasPrefix(k, rdb.AsynqKeyPrefix) {
			return false
		}
	}
	return len(keys) > 0
}

// runJobFlow exercises every script of the service once or more.
func runJobFlow(t *testing.T, ctx context.Context, e *env) {
	t.Helper()
	keys, err := e.svc.ListKeys(ctx)
	if err != nil || len(keys) == 0 {
		t.Fatalf("ListKeys: %v %v", keys, err)
	}
	if _, err := e.svc.AddCredits(ctx, keys[0].ID, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SetKeyLimits(ctx, keys[0].ID, KeyLimits{Rate: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Allow(ctx, e.owner); err != nil {
		t.Fatal(err)
	}
	hold := newBlocking("hold", 1)
	e.worker(&gradient{name: "draw", n: 1, w: 8, h: 8}, &failing{name: "broken", msg: "bad input"}, hold)
	ok := e.submit("draw", 1, "")
	if j := e.waitTerminal(ok.ID); j.Status != StatusSucceeded {
		t.Fatalf("draw: %s", j.Status)
	}
	if j := e.waitTerminal(e.submit("broken", 1, "").ID); j.Status != StatusError {
		t.Fatalf("broken: %s", j.Status)
	}
	held := e.submit("hold", 1, "")
	<-hold.started
	if _, err := e.svc.Cancel(ctx, e.owner, held.ID); err != nil {
		t.Fatal(err)
	}
	hold.Release()
	e.waitTerminal(held.ID)
	if err := e.svc.Delete(ctx, e.owner, ok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Submit(ctx, SubmitRequest{Owner: e.owner, Model: "draw", Cost: 1 << 20,
		IdempotencyKey: "order-1", Fingerprint: "f"})
	var ce *CreditsError
	if !errors.As(err, &ce) {
		t.Fatalf("an unaffordable submission: %v, want a CreditsError", err)
	}
}
