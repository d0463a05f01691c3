package queue

import (
	"context"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// A claim: reserve slots, lock tasks (store.TaskClaimOpen), run the ones a
// handler can finish inside the claim (Inliner), then lease the rest and
// write the finished ones in one statement (ClaimTx.Commit). The claimer
// loop that calls claim is in pool.go.

// claimLanes is how many claimers a pool runs. Three kept a few more of
// this machine's cores busy in some runs, but cost 4% more instructions per
// task (smaller claims, more collisions between lanes; 414k against 397k
// per task over a 200k burn-down, `perf stat -a`), and the gain did not
// hold over a noisy machine's runs.
const claimLanes = 2

// claim makes one claim of up to n tasks (n: the free slots it reserved,
// at most ClaimBatch) and returns n and how many it got. Tasks whose
// handler can run them inside the claim (Inliner) are run and finished in
// it; the others are leased and started.
func (p *Pool) claim(ctx, bg context.Context) (n, got int, err error) {
	p.mu.Lock()
	// Each lane takes its share of a batch, so the lanes overlap instead of
	// one reserving every free slot.
	n = min(p.freeLocked(), (p.cfg.ClaimBatch+claimLanes-1)/claimLanes)
	p.reserved += max(n, 0)
	p.mu.Unlock()
	if n <= 0 {
		return 0, 0, nil
	}
	var leased []*task.Task
	defer func() {
		p.mu.Lock()
		p.reserved -= n
		jobs := make([]*Job, len(leased))
		for i, t := range leased {
			jobs[i] = p.holdLocked(bg, t)
		}
		p.mu.Unlock()
		for _, j := range jobs {
			p.dispatch(bg, j)
		}
	}()
	after := p.claimFrom()
	c, err := p.store.TaskClaimOpen(ctx, n, after)
	if err != nil {
		return n, 0, err
	}
	if c == nil {
		return n, 0, nil
	}
	p.claimedTo(c.Tasks[len(c.Tasks)-1], c.At, after != nil)
	var done []store.Finish
	var finished []*task.Task
	var toLease []*task.Task
	for _, t := range c.Tasks {
		if f, ok := p.runInline(bg, t); ok {
			done = append(done, f)
			finished = append(finished, t)
		} else {
			toLease = append(toLease, t)
		}
	}
	// The commit outlives a stopping claimer: the runs are done.
	if err := c.Commit(bg, p.cfg.ID, p.cfg.Lease, toLease, done); err != nil {
		return n, len(c.Tasks), err
	}
	leased = toLease
	for i, t := range finished {
		if p.hub != nil {
			p.hub.Publish(t.ID)
		}
		if p.cfg.OnFinish != nil {
			p.cfg.OnFinish(t, done[i].State)
		}
	}
	return n, len(c.Tasks), nil
}

// claimFrom is where the next claim starts its walk (see store.ClaimKey):
// right after the last task claimed, or claimLag before the last claim's
// time if that is earlier, unless a claim from the start is due: every
// poll interval, and at once after a task was made claimable again (a
// requeue wake-up). So a task the walk skips waits at most a poll
// interval, and only if its wake-up was lost.
func (p *Pool) claimFrom() *store.ClaimKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hint == nil || p.fullClaimDue || time.Since(p.fullClaimAt) >= p.cfg.PollInterval {
		p.fullClaimAt, p.fullClaimDue = time.Now(), false
		return nil
	}
	k := *p.hint
	// A task submitted before the last claimed one may commit after that
	// claim, but only if its transaction began less than claimLag before
	// the claim: start the walk there if the last task is younger. On a
	// backlog the last task claimed is older than that, and the walk
	// starts right after it instead of re-reading the entries of every
	// task claimed in a time span of claimLag (the backlog's inserts are
	// dense: thousands of entries, each a visit to a dead row).
	if lagged := p.hintAt.Add(-claimLag); lagged.Before(k.CreatedAt) {
		k.CreatedAt, k.ID = lagged, ""
	}
	return &k
}

// claimLag covers submit transactions (one statement, milliseconds) still
// open when a claim began; a longer one is found by the next claim from the
// start. Every entry the walk passes in it is a task already claimed: at
// 10k tasks a second, 250ms is about 2500 entries.
const claimLag = 250 * time.Millisecond

// requeued makes the next claim walk from the start.
func (p *Pool) requeued() {
	p.mu.Lock()
	p.fullClaimDue = true
	p.mu.Unlock()
}

// claimedTo records the last task a claim got and when the claim began
// (the database clock): the next walk starts near it (a claim from a key
// only ever moves the place forward).
func (p *Pool) claimedTo(last *task.Task, at time.Time, fromKey bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := store.KeyOf(last); p.hint == nil || !fromKey || p.hint.Before(k) {
		p.hint, p.hintAt = &k, at
	}
}

// runInline runs t inside its claim if its handler says it can (Inliner)
// and returns its outcome to write. ok is false when the task must be
// leased instead: no Inliner, or the run wanted to write, panicked, or
// ended in a state that needs a worker again.
func (p *Pool) runInline(bg context.Context, t *task.Task) (f store.Finish, ok bool) {
	h, isInliner := p.handlers[t.Kind].(Inliner)
	if !isInliner || !h.Inline(t) {
		return f, false
	}
	ctx, cancel := context.WithCancelCause(bg)
	defer cancel(nil)
	run := *t // the run may change its copy; a leased retry starts from t
	// Room for a short pipeline's events, its final one and the claim's
	// (Commit puts that first): one allocation instead of four.
	j := &Job{Task: &run, store: p.store, ctx: ctx, cancel: cancel, stop: make(chan struct{}), inline: true,
		events: make([]task.Event, 0, 8)}
	out, panicked := p.runHandler(ctx, j)
	j.mu.Lock()
	wrote := j.wrote
	j.mu.Unlock()
	if panicked || wrote || out.Written || !out.State.Terminal() {
		return f, false
	}
	f = store.Finish{ID: t.ID, State: out.State, Result: out.Result}
	if out.Error != "" {
		f.Error = &out.Error
	}
	f.Events = append(j.takeEvents(), finalEvent(f.State, out))
	f.Steps = j.takeSteps()
	return f, true
}
