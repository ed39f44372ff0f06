package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated: a submission or cancellation was written to the Redis
// master, but fewer replicas than the URL's wait_replicas confirmed it
// within wait_timeout. The write may be lost if the master fails over now;
// the caller answers with an error (503), and a client that retries with
// the same Idempotency-Key gets the job once whichever way it went.
var ErrNotReplicated = errors.New("the write was not confirmed by enough Redis replicas")

// keyReplProbe is written right before WAIT, on WAIT's connection: WAIT
// counts the replicas that acknowledged its connection's last write, and
// the replication stream is ordered, so a replica that has the probe has
// every write made before it, on any connection.
const keyReplProbe = keyPrefix + "repl_probe"

// confirmReplicated waits until s.waitReplicas replicas hold every write
// made so far (nothing to do when it is 0).
func (s *Service) confirmReplicated(ctx context.Context) error {
	if s.waitReplicas <= 0 {
		return nil
	}
	var wait *redis.Cmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, keyReplProbe, nowMS(), 0)
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
