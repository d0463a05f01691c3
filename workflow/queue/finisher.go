package queue

import (
	"context"
	"time"

	"flightdeck/store"
)

type finishReq struct {
	f    store.Finish
	done chan finishRes
}

type finishRes struct {
	applied bool
	err     error
}

// finish hands an outcome to the finishers and waits until it is written.
func (p *Pool) finish(f store.Finish) (bool, error) {
	req := finishReq{f: f, done: make(chan finishRes, 1)}
	p.finishc <- req
	res := <-req.done
	return res.applied, res.err
}

// maxFinishBatch keeps one statement's NOTIFY payload ("id:seq," per task)
// under PostgreSQL's 8000-byte limit.
const maxFinishBatch = 150

// finisher writes outcomes in batches: whatever queued up while the previous
// statement ran goes into the next one, so under load each statement carries
// many tasks and at rest each outcome is written at once.
func (p *Pool) finisher(ctx context.Context) {
	for req := range p.finishc {
		batch := []finishReq{req}
	drain:
		for len(batch) < maxFinishBatch {
			select {
			case r, ok := <-p.finishc:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		fs := make([]store.Finish, len(batch))
		for i, r := range batch {
			fs[i] = r.f
		}
		applied, err := p.finishWithRetry(ctx, fs)
		for _, r := range batch {
			r.done <- finishRes{applied: applied[r.f.ID], err: err}
		}
	}
}

// finishWithRetry retries while the database is unreachable, for about one
// lease: after that the lease has expired and the rescuer owns the task.
func (p *Pool) finishWithRetry(ctx context.Context, fs []store.Finish) (map[string]bool, error) {
	deadline := time.Now().Add(p.cfg.Lease)
	backoff := 50 * time.Millisecond
	for {
		applied, err := p.store.TaskFinish(ctx, fs)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return applied, err
		}
		p.logger.Warn("Finishing tasks failed; retrying", "error", err, "tasks", len(fs))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}
