package jobs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
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

// ErrReplicasOffline: before a submission or cancellation was written,
// the Redis master had fewer online replicas than wait_replicas (after a
// failover, until a replica has attached to the new master and finished
// its resynchronisation), and none came online within replicaAttachWait.
// Nothing was written, so any retry is safe. Errors that match it are
// *ReplicasError.
var ErrReplicasOffline = errors.New("the Redis master has fewer online replicas than wait_replicas requires")

// Bounded wait for replicas, before a submission or cancellation is
// written, while the master has fewer online replicas than wait_replicas.
const (
	replicaAttachWait = 3 * time.Second
	replicaPollEvery  = 100 * time.Millisecond
)

// ReplicasError is the replication state of a store that cannot confirm
// writes: Online of the Required replicas are online on the master (the
// fewest of any master concerned, on a Cluster; once enough are online,
// the fewest that acknowledged a probe).
type ReplicasError struct {
	Online, Required int
	Waited           time.Duration // how long the request waited for one to attach
}

func (e *ReplicasError) Error() string {
	msg := fmt.Sprintf("jobs: the job store's Redis master has %d of the %d online replicas wait_replicas requires (a failover or a replica's resynchronisation is under way)",
		e.Online, e.Required)
	if e.Waited > 0 {
		msg += fmt.Sprintf("; waited %v for one, nothing was written", e.Waited.Round(time.Millisecond))
	}
	return msg
}

// Is makes a *ReplicasError match ErrReplicasOffline.
func (e *ReplicasError) Is(target error) bool { return target == ErrReplicasOffline }

// keyReplProbe is written right before WAIT, on WAIT's connection: WAIT
// counts the replicas that acknowledged its connection's last write, and
// the replication stream is ordered, so a replica that has the probe has
// every write made before it, on any connection.
const keyReplProbe = rdb.KeyReplProbe

func keyQueueProbe(queue string) string { return rdb.KeyQueueProbe(queue) }

// masterProbe is one master a write goes to and the probe key WAIT writes
// there.
type masterProbe struct {
	c     redis.Cmdable
	probe string
	// service and queue: this master holds the service's keys (the job
	// records) and the queue's keys (its tasks).
	service, queue bool
}

// masters are the masters a write of the service (and, on a Redis
// Cluster, a task on queue; "" for none) goes to, one per master: on one
// Redis (or a Sentinel master) the one client; on a Cluster the masters
// of the service's keys ({fashiond}) and of the queue's ({<queue>}).
func (s *Service) masters(ctx context.Context, queue string) ([]masterProbe, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return []masterProbe{{c: s.rdb, probe: keyReplProbe, service: true, queue: queue != ""}}, nil
	}
	probes := []string{keyReplProbe}
	if queue != "" {
		probes = append(probes, keyQueueProbe(queue))
	}
	var out []masterProbe
	at := map[string]int{}
	for i, probe := range probes {
		master, err := cc.MasterForKey(ctx, probe)
		if err != nil {
			return nil, fmt.Errorf("jobs: WAIT for replicas: %w", err)
		}
		addr := master.Options().Addr
		j, seen := at[addr]
		if !seen { // the stream is ordered: one WAIT per master
			j, at[addr] = len(out), len(out)
			out = append(out, masterProbe{c: master, probe: probe})
		}
		if i == 0 {
			out[j].service = true
		} else {
			out[j].queue = true
		}
	}
	return out, nil
}

// confirmReplicated waits until s.waitReplicas replicas hold every write
// made so far (nothing to do when it is 0): WAIT on each master concerned
// (see masters), one after the other.
func (s *Service) confirmReplicated(ctx context.Context, queue string) error {
	if s.waitReplicas <= 0 {
		return nil
	}
	ms, err := s.masters(ctx, queue)
	if err != nil {
		return err
	}
	for _, m := range ms {
		n, err := s.waitOn(ctx, m, s.waitTimeout)
		if err != nil {
			return err
		}
		if n < s.waitReplicas {
			return fmt.Errorf("jobs: %w (%d of %d within %v)", ErrNotReplicated, n, s.waitReplicas, s.waitTimeout.Round(time.Millisecond))
		}
	}
	return nil
}

// waitOn writes m's probe and sends WAIT on the same connection (a
// pipeline of one server's client): the number of replicas that
// acknowledged every write made so far within timeout. before, when not
// nil, queues reads in the same pipeline ahead of the probe: what they
// find was on the server whose replicas WAIT counted, before the probe.
func (s *Service) waitOn(ctx context.Context, m masterProbe, timeout time.Duration, before ...func(redis.Pipeliner)) (int, error) {
	var wait *redis.Cmd
	_, err := m.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, f := range before {
			f(p)
		}
		p.Set(ctx, m.probe, nowMS(), 0)
		wait = p.Do(ctx, "WAIT", s.waitReplicas, max(timeout.Milliseconds(), 1))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("jobs: WAIT for replicas: %w", err)
	}
	n, err := wait.Int64()
	if err != nil {
		return 0, fmt.Errorf("jobs: WAIT for replicas: %w", err)
	}
	return int(n), nil
}

// errTaskLost: a submission's job record reached the Redis master that
// confirmed it but its queue task did not, even after it was enqueued
// again; answered like ErrNotReplicated (a retry with the same
// Idempotency-Key gets the job, and the janitor re-enqueues its task).
var errTaskLost = errors.New("the job's queue task is not on the Redis master that confirmed its record")

// confirmSubmission is confirmReplicated for job id of model, which also
// checks, in the pipeline that WAITs (so on the very server whose replicas
// acknowledged it) and ahead of the probe, that the job's record is there
// and, while it has not ended and is not held in its key's backlog, its
// queue task too. Around a Sentinel failover the writes of one submission
// can reach two servers: the record, written to the old master just
// before the switch, reached the new one by replication while the task,
// enqueued on the old master after the switch, was discarded when that
// rejoined as a replica; a WAIT answered later by the new master, once a
// replica had attached, then confirmed a job that would never run (the
// stranded jobs of issue 22). A missing record is ErrNotReplicated (the
// submission was lost whole, nothing charged); a missing task is enqueued
// again (task id = job id, the job was charged once) and checked once
// more, then ErrNotReplicated. The task is checked only when enqueued
// says this request enqueued it: a job held in its key's backlog gets its
// task from the promotion that dispatches it (between the promotion and
// its enqueue the job has none; the janitor covers a promotion's lost
// enqueue).
func (s *Service) confirmSubmission(ctx context.Context, id, model string, enqueued bool) error {
	if s.waitReplicas <= 0 {
		return nil
	}
	for again := 0; ; again++ {
		err := s.checkSubmission(ctx, id, model, enqueued)
		if !errors.Is(err, errTaskLost) || again > 0 {
			return err
		}
		s.log.Warn("a submission's queue task was not on the Redis master that confirmed its record (a failover): enqueued again", "job", id)
		if err := s.enqueue(ctx, id, model); err != nil {
			return err
		}
	}
}

// checkSubmission is one WAIT per master concerned with the reads of
// confirmSubmission ahead of its probe (the task's only when enqueued).
func (s *Service) checkSubmission(ctx context.Context, id, model string, enqueued bool) error {
	queue := rdb.QueueName(model)
	ms, err := s.masters(ctx, queue)
	if err != nil {
		return err
	}
	// The task is read before the record (on a Cluster, its master
	// first): a worker ends a job with its terminal transition and only
	// then has asynq delete its task, so a task found missing belongs to
	// a record that, read after, is already terminal if the job ran.
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].queue && !ms[j].queue })
	var rec *redis.SliceCmd
	var task *redis.IntCmd
	for _, m := range ms {
		n, err := s.waitOn(ctx, m, s.waitTimeout, func(p redis.Pipeliner) {
			if m.queue && enqueued {
				task = p.Exists(ctx, rdb.TaskKey(queue, id))
			}
			if m.service {
				rec = p.HMGet(ctx, rdb.KeyJob(id), rdb.FieldStatus, rdb.FieldHeld)
			}
		})
		if err != nil {
			return err
		}
		if n < s.waitReplicas {
			return fmt.Errorf("jobs: %w (%d of %d within %v)", ErrNotReplicated, n, s.waitReplicas, s.waitTimeout.Round(time.Millisecond))
		}
	}
	if rec == nil || rec.Err() != nil || enqueued && (task == nil || task.Err() != nil) {
		return fmt.Errorf("jobs: %w: the job's record and task could not be read back", ErrNotReplicated)
	}
	v := rec.Val()
	status, _ := v[0].(string)
	held, _ := v[1].(string)
	switch {
	case status == "":
		return fmt.Errorf("jobs: %w: the job's record is not on the Redis master that confirmed the write (lost in a failover)", ErrNotReplicated)
	case enqueued && status == StatusStarting && held != "1" && task.Val() == 0:
		return fmt.Errorf("jobs: %w: %w", ErrNotReplicated, errTaskLost)
	}
	return nil
}

// awaitReplicas runs before a submission or cancellation is written
// (nothing to do without wait_replicas): while a master concerned has
// fewer online replicas than wait_replicas it polls for up to
// replicaAttachWait, then gives up with a *ReplicasError (nothing
// written). Without it, a write during a failover's degraded window would
// be stored on the master and answered "not confirmed", which a client
// without an Idempotency-Key cannot safely retry.
func (s *Service) awaitReplicas(ctx context.Context, queue string) error {
	if s.waitReplicas <= 0 {
		return nil
	}
	online, err := s.fewestOnline(ctx, queue)
	if err != nil || online >= s.waitReplicas {
		return err
	}
	start := time.Now()
	for online < s.waitReplicas {
		if waited := time.Since(start); waited >= replicaAttachWait {
			return &ReplicasError{Online: online, Required: s.waitReplicas, Waited: waited}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("jobs: waiting for a replica to come online: %w", ctx.Err())
		case <-time.After(replicaPollEvery):
		}
		if online, err = s.fewestOnline(ctx, queue); err != nil {
			return err
		}
	}
	// A replica that has just come online acknowledges with its next
	// once-a-second REPLCONF ACK, later than wait_timeout's default: see
	// it acknowledge a probe (within the rest of the wait) before writing.
	return s.awaitAcks(ctx, queue, max(replicaAttachWait-time.Since(start), s.waitTimeout), start)
}

// awaitAcks WAITs up to timeout on each master concerned for
// wait_replicas replicas to acknowledge its probe; a *ReplicasError
// (Online: the fewest that did) when they do not.
func (s *Service) awaitAcks(ctx context.Context, queue string, timeout time.Duration, start time.Time) error {
	ms, err := s.masters(ctx, queue)
	if err != nil {
		return err
	}
	for _, m := range ms {
		n, err := s.waitOn(ctx, m, timeout)
		if err != nil {
			return err
		}
		if n < s.waitReplicas {
			return &ReplicasError{Online: n, Required: s.waitReplicas, Waited: time.Since(start)}
		}
	}
	return nil
}

// ReplicaState reports the job store's replication: with wait_replicas, a
// *ReplicasError when a master has fewer online replicas than it requires
// (submissions are then refused), else nil.
func (s *Service) ReplicaState(ctx context.Context) error {
	if s.waitReplicas <= 0 {
		return nil
	}
	online, err := s.fewestOnline(ctx, "")
	if err != nil {
		return err
	}
	if online < s.waitReplicas {
		return &ReplicasError{Online: online, Required: s.waitReplicas}
	}
	return nil
}

// fewestOnline is the fewest online replicas of the masters concerned by
// a write (see masters).
func (s *Service) fewestOnline(ctx context.Context, queue string) (int, error) {
	ms, err := s.masters(ctx, queue)
	if err != nil {
		return 0, err
	}
	fewest := -1
	for _, m := range ms {
		info, err := m.c.Info(ctx, "replication").Result()
		if err != nil {
			return 0, fmt.Errorf("jobs: INFO replication: %w", err)
		}
		if n := onlineReplicas(info); fewest < 0 || n < fewest {
			fewest = n
		}
	}
	return fewest, nil
}

// onlineReplicas counts the replicas of INFO replication's text whose
// state is online (attached and done with their initial sync, so able to
// acknowledge a WAIT); 0 when the server is not a master (a demoted one
// still reached during a failover).
func onlineReplicas(info string) int {
	n := 0
	master := false
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "role:master" {
			master = true
		}
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "slave") || strings.Trim(name[len("slave"):], "0123456789") != "" || name == "slave" {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if f == "state=online" {
				n++
			}
		}
	}
	if !master {
		return 0
	}
	return n
}
