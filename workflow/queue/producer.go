package queue

import (
	"context"
	"time"

	"flightdeck/store"
)

// The producer is the one goroutine that owns a pool's state: how many
// handlers run, which tasks it holds, whether a claim or a heartbeat is in
// flight, whether it is stopping. Everything else talks to it by channel,
// so none of that state sits behind a mutex.

type jobEventKind int

const (
	handlerReturned jobEventKind = iota // the slot is free; the outcome is being written
	jobReleased                         // the outcome is written (or dropped): the task is no longer held
)

type jobEvent struct {
	j    *Job
	kind jobEventKind
}

type interruptReq struct {
	id    string
	cause error
}

type claimResult struct {
	claimed []store.Claimed
	limit   int
	err     error
}

// recheckAfter is how soon a claim that may have missed a woken task is
// followed by another: short beside the poll, long beside a submit rate's
// gaps under load, when the next wake-up's claim comes first.
const recheckAfter = 5 * time.Millisecond

type heartbeatResult struct {
	leases []store.Lease
	status []store.LeaseStatus
	err    error
}

// produce runs the pool until ctx ends and every held task is released.
//
// A claim asks for as many tasks as there are free slots (at most
// ClaimBatch), one claim at a time: while it is on its way, finishing jobs
// free more slots, and the next claim takes them all, so under load each
// claim carries a batch and at rest a task is claimed as soon as it is
// ready. A slot frees when its handler returns, while the outcome is still
// being written (the lease keeps the task ours meanwhile), so claiming
// overlaps finishing; held tasks are capped at twice the slots so a slow
// database cannot pile up outcomes.
func (p *Pool) produce(ctx, bg context.Context) {
	defer close(p.stopped)
	// Held jobs by pointer: a task handed back may be claimed again by this
	// pool before its first job has said it is done.
	held := map[*Job]bool{}
	active := 0
	claiming, want := false, true
	// recheck fires a claim shortly after one that came back short while a
	// wake-up arrived during it (see below); any claim started before then
	// makes it moot.
	var recheck <-chan time.Time
	var claims chan claimResult = make(chan claimResult, 1)
	var beats chan heartbeatResult = make(chan heartbeatResult, 1)
	beating := false
	poll := time.NewTicker(p.cfg.PollInterval)
	defer poll.Stop()
	beat := time.NewTicker(p.cfg.Lease / 3)
	defer beat.Stop()
	done := ctx.Done()
	stopping := false
	var grace <-chan time.Time

	for {
		if stopping && len(held) == 0 && !claiming {
			return
		}
		if free := min(p.cfg.Workers-active, 2*p.cfg.Workers-len(held)); want && !claiming && !stopping && free > 0 {
			limit := min(free, p.cfg.ClaimBatch)
			claiming, want = true, false
			recheck = nil // this claim sees every task committed before it
			go func() {
				claimed, err := p.store.TaskClaim(bg, p.cfg.ID, limit, p.cfg.Lease)
				claims <- claimResult{claimed: claimed, limit: limit, err: err}
			}()
		}
		select {
		case <-done:
			done = nil
			stopping = true
			p.logger.Info("Worker pool stopping", "running", active, "grace", p.cfg.Grace)
			for j := range held {
				j.drain() // start no new step; a running one may finish
			}
			grace = time.After(p.cfg.Grace)
		case <-grace:
			for j := range held {
				j.interrupt(ErrShutdown)
			}
		case res := <-claims:
			claiming = false
			if res.err != nil {
				p.logger.Warn("Claim failed", "error", res.err)
				break // the next poll tries again
			}
			for _, c := range res.claimed {
				j := p.newJob(bg, c)
				held[j] = true
				active++
				if stopping {
					// Claimed on the way out: hand it back untouched.
					j.drain()
					j.interrupt(ErrShutdown)
				}
				p.jobs <- j // never waits: held jobs are at most 2*Workers
			}
			p.busy.set(active)
			// A full claim says more may be waiting. A wake-up that came
			// while a short claim was on its way may be for a task its
			// snapshot did not see: look again shortly, unless another
			// claim starts first (the next wake-up's, under load). Claiming
			// at once instead kept an empty claim in flight for new tasks
			// to wait behind.
			woke := want
			want = len(res.claimed) == res.limit
			if woke && !want {
				recheck = time.After(recheckAfter)
			}
		case ev := <-p.jobEvents:
			// A freed slot is no reason to claim by itself: the last claim
			// came back short, so nothing was left, and anything made
			// claimable since sends a wake-up (or the poll finds it). After a
			// full claim want is still set, and the freed slot lets it run.
			// Claiming at every freed slot kept an empty claim in flight most
			// of the time at a low rate, which each new task waited behind.
			switch ev.kind {
			case handlerReturned:
				active--
				p.busy.set(active)
			case jobReleased:
				delete(held, ev.j)
			}
		case req := <-p.interrupts:
			for j := range held {
				if j.Task.ID == req.id {
					j.interrupt(req.cause)
				}
			}
		case <-recheck:
			recheck, want = nil, true
		case <-p.wake:
			want = true
		case <-poll.C:
			want = true // the poll is the source of truth (invariant 3)
		case <-beat.C:
			if beating || len(held) == 0 {
				break
			}
			beating = true
			leases := make([]store.Lease, 0, len(held))
			for j := range held {
				leases = append(leases, store.Lease{ID: j.Task.ID, Token: j.Task.LeaseToken})
			}
			go func(busy int) {
				sts, err := p.store.TaskHeartbeat(bg, leases, p.cfg.Lease)
				if werr := p.store.WorkerHeartbeat(bg, p.cfg.ID, busy, 10*p.cfg.Lease); werr != nil {
					p.logger.Warn("Worker heartbeat failed", "error", werr)
				}
				beats <- heartbeatResult{leases: leases, status: sts, err: err}
			}(active)
		case res := <-beats:
			beating = false
			p.heartbeat(held, res)
		}
	}
}

// heartbeat acts on what a lease renewal learnt: a lost lease stops the
// job without writes, a cancel or a passed deadline interrupts it, a pause
// request is handed on. This is also the backup path for cancels and
// pauses whose NOTIFY was lost.
func (p *Pool) heartbeat(held map[*Job]bool, res heartbeatResult) {
	if res.err != nil {
		// The writer retries within the lease; a job whose writes keep
		// failing gives its task up (invariant 10).
		p.logger.Warn("Heartbeat failed", "error", res.err)
		return
	}
	alive := make(map[string]store.LeaseStatus, len(res.status))
	for _, st := range res.status {
		alive[st.ID] = st
	}
	asked := make(map[store.Lease]bool, len(res.leases))
	for _, l := range res.leases {
		asked[l] = true
	}
	for j := range held {
		l := store.Lease{ID: j.Task.ID, Token: j.Task.LeaseToken}
		if !asked[l] {
			continue // claimed since the heartbeat left
		}
		st, ok := alive[l.ID]
		switch {
		case !ok:
			j.interrupt(ErrLeaseLost)
		case st.CancelRequested:
			j.interrupt(ErrCancelRequested)
		case st.DeadlinePassed:
			j.interrupt(ErrDeadline)
		case st.PauseRequested:
			j.interrupt(ErrPauseRequested)
		}
	}
}
