package queue

import (
	"context"
	"errors"
	"slices"
	"time"

	"flightdeck/internal/backoff"
	"flightdeck/store"
)

// The writer stores every job's writes (progress, step rows, parks,
// outcomes) in batches: whatever queued up while the previous statement
// ran goes into the next one (store.TaskWrites), so under load each
// statement and commit carries many tasks' writes and at rest a write goes
// out at once. There is one writer per pool: a statement's fixed cost
// (binding arrays, starting the executor, locking relations) makes larger
// batches cheaper per task than overlapping smaller ones (figures in the
// README). A job has at most one write queued (Job.flushMu), so a batch
// never holds two writes of one task.

// maxWriteBatch bounds one statement's size.
const maxWriteBatch = 256

type writeReq struct {
	w    store.TaskWrite
	done chan writeRes
}

type writeRes struct {
	written bool
	got     store.Written
	err     error
}

// write queues w and waits until it is stored: written is false when the
// lease was lost (another worker owns the task, or it ended); got is what
// the write left (a person's cancel or pause request included).
func (p *Pool) write(w store.TaskWrite) (got store.Written, written bool, err error) {
	// Every try of this write carries one id, so a retry after a lost
	// commit reply is not applied twice.
	w.WriteID = store.NewTaskID()
	req := writeReq{w: w, done: make(chan writeRes, 1)}
	p.writes <- req
	res := <-req.done
	return res.got, res.written, res.err
}

func (p *Pool) writer(ctx context.Context) {
	for req := range p.writes {
		batch := []writeReq{req}
	more:
		for len(batch) < maxWriteBatch {
			select {
			case r, ok := <-p.writes:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		p.writeBatch(ctx, batch)
	}
}

// writeBatch stores a batch and answers each request. Database faults are
// retried with backoff for about a lease (invariant 10): past that the
// lease has expired and the rescuer owns the tasks. Any other error is the
// data's, not the database's: the batch is split so only the write that
// carries it fails.
func (p *Pool) writeBatch(ctx context.Context, batch []writeReq) {
	ws := make([]store.TaskWrite, len(batch))
	for i, r := range batch {
		ws[i] = r.w
	}
	written, err := p.writeRetrying(ctx, ws)
	if err != nil && !store.Transient(err) && len(batch) > 1 {
		for _, r := range batch {
			p.writeBatch(ctx, []writeReq{r})
		}
		return
	}
	for _, r := range batch {
		got, ok := written[r.w.ID]
		r.done <- writeRes{written: ok, got: got, err: err}
	}
}

func (p *Pool) writeRetrying(ctx context.Context, ws []store.TaskWrite) (map[string]store.Written, error) {
	deadline := time.Now().Add(p.cfg.Lease)
	for try := 1; ; try++ {
		if try == 2 {
			// the first try may have committed with its reply lost
			ws = slices.Clone(ws)
			for i := range ws {
				ws[i].Retried = true
			}
		}
		written, err := p.store.TaskWrites(ctx, ws)
		if err == nil || !store.Transient(err) || ctx.Err() != nil {
			return written, err
		}
		// Jittered, so pools that lost the database together do not come
		// back at the same instant.
		wait := backoff.Exponential(20*time.Millisecond, time.Second, try)
		if time.Now().Add(wait).After(deadline) {
			return written, err
		}
		p.logger.Warn("Writing tasks failed; retrying", "error", err, "tasks", len(ws), "in", wait)
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}
