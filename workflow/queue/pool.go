// Package queue is flightdeck's worker pool: it claims tasks from PostgreSQL
// (FOR UPDATE SKIP LOCKED, in batches), holds them under leases renewed by
// heartbeats, hands them to a Handler per task kind, writes their outcomes in
// batches, rescues tasks whose worker died, and stops gracefully. It knows
// nothing of sagas or agents: cmd plugs the handlers in.
package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/event"
	"flightdeck/workflow/task"
)

// Config configures a Pool. Zero values mean the defaults.
type Config struct {
	ID             string        // worker id (lease owner); default host-pid-random
	Workers        int           // concurrent tasks, default 8
	Lease          time.Duration // default 10s; heartbeats renew every Lease/3
	PollInterval   time.Duration // claim poll when no NOTIFY arrives, default 500ms
	RescueInterval time.Duration // expired-lease sweep, default Lease/2
	Grace          time.Duration // on stop, how long running tasks may finish, default 30s
	ClaimBatch     int           // most tasks leased by one claim (all lanes), default min(Workers, 100)
	// InlineBatch is the most tasks one claim locks while the tasks before
	// ran inside their claims (Inliner), default 800. They need no slot,
	// but a claim is only made with at least one free.
	InlineBatch    int
	IdempotencyTTL time.Duration // default 24h
	Logger         *slog.Logger
	// OnFinish, if set, is called after a task's outcome was written
	// (benchmarks, metrics). It must not block.
	OnFinish func(t *task.Task, state task.State)
}

// Pool runs tasks.
type Pool struct {
	cfg      Config
	store    *store.Store
	handlers map[task.Kind]Handler
	hub      *event.Hub
	logger   *slog.Logger

	wake    chan struct{}
	finishc chan finishReq
	jobc    chan *Job // hands claimed tasks to idle job goroutines

	mu      sync.Mutex
	running map[string]*Job // held tasks: handler running, or outcome being written
	active  int             // handlers running (the slots in use)
	// reserved: slots held for claims in flight (their tasks may all need
	// a slot once leased)
	reserved int
	// lastInline: how many tasks the last claim ran inside it
	lastInline int
	// hint: where the next claim's walk starts; fullClaimAt: when a claim
	// last walked from the start (claimFrom)
	hint         *store.ClaimKey
	hintAt       time.Time // the database clock when hint's claim began
	fullClaimAt  time.Time
	fullClaimDue bool
	jobs         sync.WaitGroup
}

// New returns a pool; Attach it to a Notifier, then Run it.
func New(st *store.Store, handlers map[task.Kind]Handler, hub *event.Hub, cfg Config) *Pool {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	cfg.ID = cmp.Or(cfg.ID, fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b)))
	cfg.Workers = cmp.Or(cfg.Workers, 8)
	cfg.Lease = cmp.Or(cfg.Lease, 10*time.Second)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, 500*time.Millisecond)
	cfg.RescueInterval = cmp.Or(cfg.RescueInterval, cfg.Lease/2)
	cfg.Grace = cmp.Or(cfg.Grace, 30*time.Second)
	cfg.ClaimBatch = cmp.Or(cfg.ClaimBatch, min(cfg.Workers, 100))
	cfg.InlineBatch = cmp.Or(cfg.InlineBatch, 800)
	cfg.IdempotencyTTL = cmp.Or(cfg.IdempotencyTTL, 24*time.Hour)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pool{
		cfg: cfg, store: st, handlers: handlers, hub: hub, logger: logger.With("worker", cfg.ID),
		wake:    make(chan struct{}, 1),
		finishc: make(chan finishReq, cfg.Workers),
		jobc:    make(chan *Job),
		running: map[string]*Job{},
	}
}

// ClaimBatches are the pool's ClaimBatch and InlineBatch with defaults
// applied (benchmarks report them).
func (p *Pool) ClaimBatches() (claim, inline int) { return p.cfg.ClaimBatch, p.cfg.InlineBatch }

// ID is the pool's lease owner name.
func (p *Pool) ID() string { return p.cfg.ID }

// Attach wakes the claimer on task_ready and delivers cancels on task_cancel.
func (p *Pool) Attach(n *event.Notifier) {
	n.On(event.ChannelTaskReady, func(payload string) {
		// This process's own wake-ups came through OnTaskReady already.
		if wake, requeue := p.store.TaskReadyFromElsewhere(payload); wake {
			p.ready(requeue)
		}
	})
	n.On(event.ChannelTaskCancel, func(id string) { p.interrupt(id, ErrCancelRequested) })
	n.OnConnect(p.Wake)
}

// ready is a task_ready wake-up.
func (p *Pool) ready(requeue bool) {
	if requeue {
		p.requeued()
	}
	p.Wake()
}

// Wake asks the claimer to look for work now.
func (p *Pool) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Busy is the number of handlers running now (slots in use).
func (p *Pool) Busy() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active
}

// free is how many tasks the claimer may take now: a slot frees when its
// handler returns, while its outcome is still being written (the lease,
// renewed meanwhile, keeps it ours), so claiming overlaps finishing. Held
// tasks are capped at twice the slots so a slow database cannot pile up
// outcomes.
func (p *Pool) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.freeLocked()
}

// freeLocked is free with p.mu held; slots reserved by a claim in flight
// are not free.
func (p *Pool) freeLocked() int {
	return min(p.cfg.Workers-p.active, 2*p.cfg.Workers-len(p.running)) - p.reserved
}

// Run works until ctx ends, then stops gracefully: no new claims, running
// tasks get Grace to finish, the rest are interrupted with ErrShutdown and
// handed back at once so another worker resumes them.
func (p *Pool) Run(ctx context.Context) error {
	// Writes during shutdown must outlive ctx.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	if err := p.store.WorkerRegister(bg, p.cfg.ID, hostname(), os.Getpid(), p.cfg.Workers); err != nil {
		p.logger.Warn("Could not register worker", "error", err)
	}

	var loops sync.WaitGroup
	finishers := 2
	for range finishers {
		loops.Go(func() { p.finisher(bg) })
	}
	maint, stopMaint := context.WithCancel(bg)
	loops.Go(func() { p.heartbeat(maint) })
	loops.Go(func() { p.rescuer(maint) })

	// Tasks made claimable by this process wake the claimers at once,
	// without the NOTIFY's round trip (Attach skips those NOTIFYs).
	stopReady := p.store.OnTaskReady(p.ready)
	defer stopReady()
	var claimers sync.WaitGroup
	for range claimLanes {
		claimers.Go(func() { p.claimer(ctx, bg) })
	}
	claimers.Wait() // the claimers return when ctx ends
	close(p.jobc)   // idle job goroutines leave; busy ones after their task

	p.logger.Info("Worker pool stopping", "running", p.Busy(), "grace", p.cfg.Grace)
	done := make(chan struct{})
	go func() { p.jobs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(p.cfg.Grace):
		p.mu.Lock()
		for _, j := range p.running {
			j.interrupt(ErrShutdown)
		}
		p.mu.Unlock()
		<-done
	}
	close(p.finishc)
	stopMaint()
	loops.Wait()
	if err := p.store.WorkerDelete(bg, p.cfg.ID); err != nil {
		p.logger.Warn("Could not deregister worker", "error", err)
	}
	p.logger.Info("Worker pool stopped")
	return nil
}

// claimer claims work whenever there are free slots and a reason to look:
// a NOTIFY, a finished task, or the poll tick (the source of truth). Each
// pool runs claimLanes claimers: a claim is two round trips with the
// inline runs between them, and the other lane claims meanwhile.
func (p *Pool) claimer(ctx, bg context.Context) {
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	for {
		for {
			n, got, err := p.claim(ctx, bg)
			if err != nil {
				if ctx.Err() == nil {
					p.logger.Warn("Claim failed", "error", err)
				}
				break
			}
			if n == 0 || got < n {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
			// Under load, wake-ups come one finished task at a time; a short
			// pause lets several slots free up so one claim statement takes
			// a batch instead of a task. At rest the pause is skipped.
			if busy := p.Busy(); busy > 0 && p.free() < p.cfg.ClaimBatch/4 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(claimCoalesce):
				}
			}
		case <-tick.C:
		}
	}
}

// claimCoalesce is how long a busy claimer waits for more free slots.
const claimCoalesce = 5 * time.Millisecond

// holdLocked registers a leased task as held and running; p.mu is held.
func (p *Pool) holdLocked(bg context.Context, t *task.Task) *Job {
	ctx, cancel := context.WithCancelCause(bg)
	j := &Job{Task: t, store: p.store, ctx: ctx, cancel: cancel, stop: make(chan struct{})}
	p.running[t.ID] = j
	p.active++
	if t.CancelRequested && t.State == task.StateRunning {
		cancel(ErrCancelRequested)
	}
	return j
}

// dispatch hands a held task to an idle job goroutine or a new one.
func (p *Pool) dispatch(bg context.Context, j *Job) {
	select {
	case p.jobc <- j: // an idle goroutine takes it
	default:
		p.jobs.Go(func() { p.jobLoop(bg, j) })
	}
}

// jobLoop runs tasks one after another on one goroutine, so a busy pool
// reuses goroutines (and their grown stacks) instead of starting one per
// task; it ends after a minute without work or when the pool stops.
func (p *Pool) jobLoop(bg context.Context, j *Job) {
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	for {
		p.execute(j.ctx, bg, j)
		j.cancel(nil)
		p.mu.Lock()
		delete(p.running, j.Task.ID)
		p.mu.Unlock()
		p.Wake()
		idle.Reset(time.Minute)
		var ok bool
		select {
		case j, ok = <-p.jobc:
			if !ok {
				return
			}
		case <-idle.C:
			return
		}
	}
}

func (p *Pool) execute(ctx, bg context.Context, j *Job) {
	t := j.Task
	out, panicked := p.runHandler(ctx, j)
	p.mu.Lock()
	p.active--
	p.mu.Unlock()
	p.Wake()
	cause := context.Cause(ctx)
	if stop := j.StopCause(); stop != nil {
		cause = stop // shutdown or a lost lease outranks an earlier cancel
	}
	if errors.Is(cause, ErrLeaseLost) {
		p.taskLogger(t).Warn("Lease lost; dropping the task without writing")
		return
	}
	if out.Written {
		if p.hub != nil {
			p.hub.Publish(t.ID)
		}
		return
	}
	f := store.Finish{ID: t.ID, Token: t.LeaseToken, State: out.State, Result: out.Result, RunAfter: out.RunAfter}
	if panicked {
		// Counted like a worker that died: started again while attempts last.
		f.BumpAttempt = true
		f.State = task.StatePending
		if t.Attempt >= t.MaxAttempts {
			f.State = task.StateFailed
		}
	}
	if errors.Is(cause, ErrShutdown) && !f.State.Terminal() && !parked(f.State) {
		f.State = releaseState(j)
		out.Message = "Worker shutting down; handed back to the queue"
	}
	if f.State == "" || f.State == task.StateRunning {
		f.State = releaseState(j)
	}
	if out.Error != "" {
		f.Error = &out.Error
	}
	f.Events = append(j.takeEvents(), finalEvent(f.State, out))
	f.Steps = j.takeSteps()
	applied, err := p.finish(f)
	switch {
	case err != nil:
		p.taskLogger(t).Error("Could not record the task's outcome; the rescuer will re-queue it", "error", err)
	case !applied:
		p.taskLogger(t).Warn("Lease lost before the outcome was written; another worker owns the task")
	default:
		if p.hub != nil {
			p.hub.Publish(t.ID)
		}
		if p.cfg.OnFinish != nil {
			p.cfg.OnFinish(t, f.State)
		}
	}
}

// runHandler runs the kind's handler, turning a panic into a failed attempt
// so the process lives on.
func (p *Pool) runHandler(ctx context.Context, j *Job) (out Outcome, panicked bool) {
	h, ok := p.handlers[j.Task.Kind]
	if !ok {
		return Outcome{State: task.StateFailed, Error: fmt.Sprintf("no handler for task kind %q on this worker", j.Task.Kind)}, false
	}
	defer func() {
		if r := recover(); r != nil {
			p.taskLogger(j.Task).Error("Handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out = Outcome{State: task.StateFailed, Error: fmt.Sprintf("handler panicked: %v", r)}
			panicked = true
		}
	}()
	return h.Run(ctx, j), false
}

// releaseState is where a handed-back task rests: compensating tasks stay
// compensating (claimable), everything else is pending.
func releaseState(j *Job) task.State {
	if j.Task.State == task.StateCompensating {
		return task.StateCompensating
	}
	return task.StatePending
}

func parked(s task.State) bool {
	return s == task.StateAwaitingApproval || s == task.StateAwaitingInput || s == task.StateScheduled || s == task.StateNeedsAttention
}

// finalEvent describes the transition a finish makes.
func finalEvent(s task.State, out Outcome) task.Event {
	// Without an error (most tasks) the data is built without reflection;
	// states are plain words.
	data := json.RawMessage(`{"state":"` + string(s) + `","error":null}`)
	if out.Error != "" {
		data, _ = json.Marshal(struct {
			State task.State `json:"state"`
			Error string     `json:"error"`
		}{s, out.Error})
	}
	if s.Terminal() {
		typ, status := task.TerminalEvent(s)
		msg := out.Message
		if msg == "" {
			msg = "Task " + string(s)
			if out.Error != "" {
				msg += ": " + out.Error
			}
		}
		return task.Event{Type: typ, Status: status, Message: msg, Data: data}
	}
	status := task.StatusLog
	switch s {
	case task.StateAwaitingApproval:
		status = task.StatusApproval
	case task.StateCompensating, task.StateNeedsAttention:
		status = task.StatusCompensating
	}
	msg := out.Message
	if msg == "" {
		msg = "Task " + string(s)
	}
	return task.Event{Type: task.EventTaskState, Status: status, Message: msg, Data: data}
}

// interrupt cancels a held task's context with cause.
func (p *Pool) interrupt(id string, cause error) {
	p.mu.Lock()
	j := p.running[id]
	p.mu.Unlock()
	if j != nil {
		j.interrupt(cause)
	}
}

// taskLogger is made only where something is logged: attributes cost
// formatting on every task otherwise.
func (p *Pool) taskLogger(t *task.Task) *slog.Logger {
	return p.logger.With("task_id", t.ID, "kind", t.Kind, "attempt", t.Attempt)
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
