package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// ErrNotReplicated: a submission or cancellation was written to the Redis
// master, but fewer replicas than the URL's wait_replicas confirmed it
// within wait_timeout. The write may be lost if the master fails over now;
// the caller answers with an error (503), and a client that retries with
// the same Idempotency-Key gets the job once whichever way it went.
var ErrNotReplicated = errors.New("the write was not confirmed by enough Redis replicas")

// The replication probes (see rdb.KeyReplProbe and rdb.KeyQueueProbe).
const keyReplProbe = rdb.KeyReplProbe

func keyQueueProbe(queue string) string { return rdb.KeyQueueProbe(queue) }

// confirmReplicated waits until s.waitReplicas replicas hold every write
// made so far (nothing to do when it is 0). On one Redis (or a Sentinel
// master) one WAIT covers everything. On a Redis Cluster a submission
// wrote to two shards, the service's keys ({fashiond}) and the model
// queue's task ({<queue>}, queue "" for none): WAIT runs on the master of
// each, one after the other.
func (s *Service) confirmReplicated(ctx context.Context, queue string) error {
	if s.waitReplicas <= 0 {
		return nil
	}
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return s.waitOn(ctx, s.rdb, keyReplProbe)
	}
	probes := []string{keyReplProbe}
	if queue != "" {
		probes = append(probes, keyQueueProbe(queue))
	}
	done := map[string]bool{}
	for _, probe := range probes {
		master, err := cc.MasterForKey(ctx, probe)
		if err != nil {
			return fmt.Errorf("jobs: WAIT for replicas: %w", err)
		}
		if addr := master.Options().Addr; !done[addr] {
			done[addr] = true // the stream is ordered: one WAIT per master
			if err := s.waitOn(ctx, master, probe); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitOn writes probe and sends WAIT on the same connection of c (a
// pipeline of one server's client).
func (s *Service) waitOn(ctx context.Context, c redis.Cmdable, probe string) error {
	var wait *redis.Cmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, probe, nowMS(), 0)
		wait = p.Do(ctx, "WAIT", s.waitReplicas, s.waitTimeout.Milliseconds())
		return nil
	})
	if err != nil {
		return fmt.Errorf("jobs: WAIT for replicas: %w", err)
	}
	n, err := wait.Int64()
	if err != nil {
		return fmt.Errorf("jobs: WAIT for replicas: %w", err)
	}
	if n < int64(s.waitReplicas) {
		return fmt.Errorf("jobs: %w (%d of %d within %v)", ErrNotReplicated, n, s.waitReplicas, s.waitTimeout.Round(time.Millisecond))
	}
	return nil
}
