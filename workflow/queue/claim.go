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

// claim makes one claim and returns how many tasks it asked for (n) and
// how many it took (got; got < n means the queue had no more for now, or
// no slot for the rest).
//
// A claim asks for as many tasks as it can lease (the free slots it
// reserves, its lane's share of ClaimBatch) or, while tasks run inside
// their claims (Inliner: no slot needed), for twice as many as the last
// claim ran there, up to InlineBatch: on a backlog of such tasks each claim
// takes hundreds, and a claim's fixed cost (its round trips, statements,
// commit and wake-up) is shared by all of them (1M-task burn-down, busy
// CPU per task: 50 a claim 62–69 µs, 200 about 54, 400 about 49, 800
// about 45, 1600 no less). Tasks are taken in claim
// order: run inside the claim, or leased while a reserved slot is left;
// the first that can be neither is left pending with every task after
// it, so no task is ever taken before one of higher priority.
func (p *Pool) claim(ctx, bg context.Context) (n, got int, err error) {
	p.mu.Lock()
	// Each lane takes its share of a batch, so the lanes overlap instead of
	// one reserving every free slot.
	slots := min(p.freeLocked(), (p.cfg.ClaimBatch+claimLanes-1)/claimLanes)
	if slots <= 0 {
		// Without a free slot nothing is claimed, even tasks that would run
		// inside the claim: finding out costs a claim, and a pool whose
		// slots are full of other tasks would pay it on every wake-up.
		p.mu.Unlock()
		return 0, 0, nil
	}
	n = max(slots, min(2*p.lastInline, p.cfg.InlineBatch))
	p.reserved += slots
	p.mu.Unlock()
	var leased []*task.Task
	defer func() {
		p.mu.Lock()
		p.reserved -= slots
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
		p.ranInline(0)
		return n, 0, nil
	}
	var done []store.Finish
	var finished []*task.Task
	var toLease []*task.Task
	taken := c.Tasks
	for i, t := range c.Tasks {
		if f, ok := p.runInline(bg, t); ok {
			done = append(done, f)
			finished = append(finished, t)
		} else if len(toLease) < slots {
			toLease = append(toLease, t)
		} else {
			taken = c.Tasks[:i]
			break
		}
	}
	p.ranInline(len(done))
	if len(taken) < len(c.Tasks) {
		// The walk must come back for the tasks left behind: they lie
		// before where this claim's key would move it. got < n then, so
		// the claimer waits for a slot.
		p.requeued()
	}
	if len(taken) > 0 {
		p.claimedTo(taken[len(taken)-1], c.At, after != nil)
	}
	// The commit outlives a stopping claimer: the runs are done.
	if err := c.Commit(bg, p.cfg.ID, p.cfg.Lease, toLease, done); err != nil {
		return n, len(taken), err
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
	return n, len(taken), nil
}

// ranInline records how many tasks the last claim ran inside it, which
// sizes the next claim.
func (p *Pool) ranInline(k int) {
	p.mu.Lock()
	p.lastInline = k
	p.mu.Unlock()
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
