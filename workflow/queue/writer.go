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

// finalBatch is how many outcomes make a batch worth sending without
// waiting FinalGather for more.
const finalBatch = 64

type writeReq struct {
	w     store.TaskWrite
	final bool // an outcome: nothing of its task waits for it
	done  chan writeRes
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
	return p.queueWrite(w, false)
}

// writeFinal is write for a task's outcome, its final write: the writer
// may hold it briefly to gather others into one statement (River's
// asynchronous completer), since no step of its task waits for it and its
// slot is already free. The lease still fences it.
func (p *Pool) writeFinal(w store.TaskWrite) (got store.Written, written bool, err error) {
	return p.queueWrite(w, true)
}

func (p *Pool) queueWrite(w store.TaskWrite, final bool) (store.Written, bool, error) {
	// Every try of this write carries one id, so a retry after a lost
	// commit reply is not applied twice.
	w.WriteID = store.NewTaskID()
	req := writeReq{w: w, final: final, done: make(chan writeRes, 1)}
	p.writes <- req
	res := <-req.done
	return res.got, res.written, res.err
}

func (p *Pool) writer(ctx context.Context) {
	for req := range p.writes {
		batch := []writeReq{req}
		open := p.gather(&batch, nil)
		// A batch of outcomes only, and few: wait a moment for more, unless
		// a write that something waits for arrives (a step's end before the
		// next step) or the pool stops.
		if open && p.cfg.FinalGather > 0 && len(batch) < finalBatch && allFinal(batch) {
			timer := time.NewTimer(p.cfg.FinalGather)
			open = p.gather(&batch, timer.C)
			timer.Stop()
		}
		p.writeBatch(ctx, batch)
		if !open {
			for r := range p.writes { // closed: what is left, then stop
				p.writeBatch(ctx, []writeReq{r})
			}
			return
		}
	}
}

// gather adds queued writes to batch: those already waiting when wait is
// nil; with wait, until it fires, a non-final write arrives, or the batch
// is full. It reports false once the queue is closed.
func (p *Pool) gather(batch *[]writeReq, wait <-chan time.Time) bool {
	for len(*batch) < maxWriteBatch {
		if wait == nil {
			select {
			case r, ok := <-p.writes:
				if !ok {
					return false
				}
				*batch = append(*batch, r)
				continue
			default:
				return true
			}
		}
		select {
		case r, ok := <-p.writes:
			if !ok {
				return false
			}
			*batch = append(*batch, r)
			if !r.final || len(*batch) >= finalBatch {
				return true
			}
		case <-wait:
			return true
		}
	}
	return true
}

func allFinal(batch []writeReq) bool {
	for _, r := range batch {
		if !r.final {
			return false
		}
	}
	return true
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
