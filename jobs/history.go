package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"fashiond/jobs/internal/rdb"
)

// Cancel ends owner's unfinished job with status canceled and refunds it:
// a waiting job never starts (its queue task is deleted); a running one is
// stopped by its worker, which watches the job's events. ErrNotFound for
// unknown and other owners' jobs; ErrNotCancelable (with the job) when it
// has ended.
func (s *Service) Cancel(ctx context.Context, owner, id string) (*Job, error) {
	r, err := s.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.awaitReplicas(ctx, ""); err != nil {
		return nil, err // nothing written: any retry is safe
	}
	n, err := s.db.Refund(ctx, rdb.Refund{JobID: id, Owner: owner, Status: StatusCanceled,
		Ledger: ledgerJSON("refund", id, r.Model, int64(r.Cost)), OwnerOnly: true})
	if err != nil {
		return nil, fmt.Errorf("jobs: cancel %s: %w", id, err)
	}
	if n == -1 {
		return nil, ErrNotFound
	}
	if n == 1 {
		s.deleteTask(rdb.QueueName(r.Model), id)
		s.dropInputs(ctx, id, owner)
		s.promote(ctx, r.Model, owner)
		if r2, err := s.load(ctx, id); err == nil {
			s.enqueueWebhook(ctx, r2)
		}
	}
	if n == 1 {
		if err := s.confirmReplicated(ctx, ""); err != nil {
			return nil, err // a retried cancel finds the job cancelled, or cancels it
		}
	}
	j, err := s.Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return j, ErrNotCancelable
	}
	return j, nil
}

// Delete removes owner's ended job's outputs from the store at once and
// leaves a tombstone (until the retention ends) so that its status is 404
// and it leaves the history. ErrNotFound for unknown, deleted and other
// owners' jobs; ErrJobUnfinished while it may still run (cancel it first).
func (s *Service) Delete(ctx context.Context, owner, id string) error {
	r, err := s.load(ctx, id)
	if err != nil {
		return err
	}
	if r.Owner != owner {
		return ErrNotFound
	}
	n, err := s.db.Tombstone(ctx, owner, id, r.IdemKey)
	switch {
	case err != nil:
		return fmt.Errorf("jobs: delete %s: %w", id, err)
	case n == rdb.TombstoneNotFound:
		return ErrNotFound
	case n == rdb.TombstoneUnfinished:
		return ErrJobUnfinished
	}
	if err := s.store.DeletePrefix(ctx, id+"/"); err != nil {
		return fmt.Errorf("jobs: delete %s: outputs: %w", id, err)
	}
	return nil
}

// List bounds.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
	// listScanFactor bounds the records read per page when filtering.
	listScanFactor = 10
)

// List pages owner's jobs, newest first. The cursor is opaque: the
// creation time (ms) and id of the last job of the previous page.
func (s *Service) List(ctx context.Context, owner string, q ListQuery) (ListPage, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultListLimit
	}
	q.Limit = min(q.Limit, MaxListLimit)
	maxScore, after, err := parseCursor(q.Cursor)
	if err != nil {
		return ListPage{}, err
	}
	page := ListPage{Jobs: []Job{}}
	scanned := 0
	for len(page.Jobs) < q.Limit && scanned < q.Limit*listScanFactor {
		zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, rdb.KeyOwnerJobs(owner), &redis.ZRangeBy{
			Max: maxScore, Min: "-inf", Count: int64(q.Limit + 1)}).Result()
		if err != nil {
			return ListPage{}, fmt.Errorf("jobs: list: %w", err)
		}
		zs = skipThrough(zs, after)
		if len(zs) == 0 {
			return page, nil
		}
		for _, z := range zs {
			id := z.Member.(string)
			scanned++
			maxScore, after = strconv.FormatInt(int64(z.Score), 10), id
			r, err := s.load(ctx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return ListPage{}, err
			}
			if (q.Model == "" || r.Model == q.Model) && (q.Status == "" || r.Status == q.Status) {
				page.Jobs = append(page.Jobs, r.Job)
			}
			if len(page.Jobs) == q.Limit {
				break
			}
		}
	}
	page.NextCursor = maxScore + "." + after
	return page, nil
}

// ErrBadCursor: the cursor of GET /v1/jobs is not one it gave (400).
var ErrBadCursor = errors.New("invalid cursor")

// ErrJobUnfinished: the job may still run; cancel it first (409).
var ErrJobUnfinished = errors.New("the job has not ended")

// parseCursor splits "<ms>.<id>"; "" is the first page.
func parseCursor(c string) (maxScore, after string, err error) {
	if c == "" {
		return "+inf", "", nil
	}
	ms, id, ok := strings.Cut(c, ".")
	if _, err := strconv.ParseInt(ms, 10, 64); !ok || err != nil || !validID(id) {
		return "", "", ErrBadCursor
	}
	return ms, id, nil
}

// skipThrough drops the entries up to and including member after (the
// last job of the previous page) among those with the same score.
func skipThrough(zs []redis.Z, after string) []redis.Z {
	if after == "" {
		return zs
	}
	for i, z := range zs {
		if z.Member.(string) == after {
			return zs[i+1:]
		}
	}
	return zs
}
