// Package queue is flightdeck's worker pool: it claims tasks from PostgreSQL
// (FOR NO KEY UPDATE SKIP LOCKED, in batches), holds them under leases
// renewed by heartbeats, hands them to a Handler per task kind, writes what
// they report through one batched writer, rescues tasks whose worker died,
// and stops gracefully. Every task takes this one path, whatever it runs.
// It knows nothing of sagas or agents: cmd plugs the handlers in.
//
// Who owns what: the producer goroutine (producer.go) owns the pool's state
// (free slots, held jobs, when to claim, heartbeats); each job runs on a
// goroutine of its own (job.go) and reports back to the producer by
// channel; the writer (writer.go) batches every job's writes into one
// statement; the rescuer (maintain.go) re-queues expired leases on any node.
package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"flightdeck/internal/notify"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// Config configures a Pool. Zero values mean the defaults.
type Config struct {
	ID           string        // worker id (lease owner); default host-pid-random
	Workers      int           // concurrent tasks, default 8
	Lease        time.Duration // default 10s; heartbeats renew every Lease/3
	PollInterval time.Duration // claim poll when no wake-up arrives, default 500ms
	// RescueInterval is the expired-lease sweep (with the housekeeping:
	// scheduled retries, deadlines), default Lease/4: a dead worker's task
	// is claimed again at most a lease and a quarter after its last renewal
	// (12.5 s by default, within quality.md's 15 s), not a lease and a half.
	RescueInterval time.Duration
	// LivenessInterval is how often the pool looks for workers whose
	// process died (their liveness lock is free: store.TaskRescueDead)
	// and re-queues their tasks at once, default 500ms; a hung or cut-off
	// worker is still bounded by its lease.
	LivenessInterval time.Duration
	// Grace is how long running steps may finish once the pool stops
	// (default 30s); then they are interrupted and their tasks handed back.
	Grace          time.Duration
	ClaimBatch     int           // most tasks one claim takes, default min(Workers, 200)
	IdempotencyTTL time.Duration // default 24h
	Logger         *slog.Logger
	// FinalGather is how long the writer may hold a batch of final writes
	// (outcomes: their handlers have returned and their slots are free) to
	// gather more into the statement, default 2ms; a batch that carries
	// any other write, or finalBatch outcomes, goes at once. Negative: never.
	FinalGather time.Duration
	// OnFinish, if set, is called after a task's outcome was written
	// (benchmarks, metrics), with how long it took from the handler's
	// return to the outcome's commit: the window in which a crash re-runs
	// the task's last step. It must not block.
	OnFinish func(t *task.Task, state task.State, window time.Duration)
}

// Pool runs tasks.
type Pool struct {
	cfg      Config
	store    *store.Store
	handlers map[task.Kind]Handler
	logger   *slog.Logger

	wake       chan struct{}     // a reason to claim now
	interrupts chan interruptReq // cancels from other processes
	jobEvents  chan jobEvent     // jobs report to the producer
	jobs       chan *Job         // claimed jobs for the runners
	writes     chan writeReq     // the writer's queue
	stopped    chan struct{}     // closed when the producer returned
	busy       busyCount
}

// New returns a pool; Attach it to a notify.Listener, then Run it.
func New(st *store.Store, handlers map[task.Kind]Handler, cfg Config) *Pool {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	cfg.ID = cmp.Or(cfg.ID, fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b)))
	cfg.Workers = cmp.Or(cfg.Workers, 8)
	cfg.Lease = cmp.Or(cfg.Lease, 10*time.Second)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, 500*time.Millisecond)
	cfg.RescueInterval = cmp.Or(cfg.RescueInterval, cfg.Lease/4)
	cfg.LivenessInterval = cmp.Or(cfg.LivenessInterval, 500*time.Millisecond)
	cfg.FinalGather = cmp.Or(cfg.FinalGather, 2*time.Millisecond)
	cfg.Grace = cmp.Or(cfg.Grace, 30*time.Second)
	cfg.ClaimBatch = cmp.Or(cfg.ClaimBatch, min(cfg.Workers, 200))
	cfg.IdempotencyTTL = cmp.Or(cfg.IdempotencyTTL, 24*time.Hour)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pool{
		cfg: cfg, store: st, handlers: handlers, logger: logger.With("worker", cfg.ID),
		wake:       make(chan struct{}, 1),
		interrupts: make(chan interruptReq),
		jobEvents:  make(chan jobEvent, 2*cfg.Workers),
		jobs:       make(chan *Job, 2*cfg.Workers),
		writes:     make(chan writeReq, 2*cfg.Workers),
		stopped:    make(chan struct{}),
	}
}

// ClaimBatch is the most tasks one claim takes (benchmarks report it).
func (p *Pool) ClaimBatch() int { return p.cfg.ClaimBatch }

// ID is the pool's lease owner name.
func (p *Pool) ID() string { return p.cfg.ID }

// Attach wakes the producer on task_ready and delivers cancels on
// task_cancel and pause requests on task_pause.
func (p *Pool) Attach(n *notify.Listener) {
	n.On(notify.TaskReady, func(payload string) {
		// This process's own wake-ups came through its bus already.
		if notify.DecodeReady(payload, p.store.Wakeups().Origin()) {
			p.Wake()
		}
	})
	n.On(notify.TaskCancel, func(payload string) {
		for _, id := range notify.DecodeCancel(payload) {
			p.interrupt(id, ErrCancelRequested)
		}
	})
	n.On(notify.TaskPause, func(payload string) {
		for _, id := range notify.DecodeCancel(payload) {
			p.interrupt(id, ErrPauseRequested)
		}
	})
	n.OnConnect(p.Wake)
}

// Wake asks the producer to look for work now.
func (p *Pool) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Busy is the number of handlers running now (slots in use).
func (p *Pool) Busy() int { return p.busy.get() }

// interrupt asks the producer to cancel a held task's context with cause.
func (p *Pool) interrupt(id string, cause error) {
	select {
	case p.interrupts <- interruptReq{id: id, cause: cause}:
	case <-p.stopped:
	}
}

// Run works until ctx ends, then stops gracefully: it claims nothing more,
// running tasks start no new step and get Grace to finish the ones they
// run, then they are interrupted with ErrShutdown; every task still held
// is handed back at once so another worker resumes it.
func (p *Pool) Run(ctx context.Context) error {
	// Writes during shutdown must outlive ctx.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	// The liveness lock first, then the registration that names it: no
	// rescuer may see a key nobody holds yet.
	hold, err := p.store.WorkerHold(bg)
	var key *int32
	if err != nil {
		p.logger.Warn("Could not take the liveness lock; only the lease will tell this worker's death", "error", err)
	} else {
		k := hold.Key()
		key = &k
	}
	if err := p.store.WorkerRegister(bg, p.cfg.ID, hostname(), os.Getpid(), p.cfg.Workers, key); err != nil {
		p.logger.Warn("Could not register worker", "error", err)
	}
	var writer sync.WaitGroup
	writer.Go(func() { p.writer(bg) })
	var maint sync.WaitGroup
	maintCtx, stopMaint := context.WithCancel(bg)
	maint.Go(func() { p.rescuer(maintCtx) })
	maint.Go(func() { hold = p.liveness(maintCtx, hold) })

	// Runners are started once, as many as tasks may be held: a job's
	// goroutine and its grown stack serve task after task, not one each.
	var runners sync.WaitGroup
	for range 2 * p.cfg.Workers {
		runners.Go(func() {
			for j := range p.jobs {
				p.runJob(j)
			}
		})
	}
	// Tasks made claimable by this process wake the producer at once,
	// without the NOTIFY's round trip (Attach skips those NOTIFYs).
	stopReady := p.store.Wakeups().OnReady(p.Wake)
	// Pause requests made in this process reach its jobs before the
	// request is answered.
	stopPause := p.store.Wakeups().OnPause(func(ids []string) {
		for _, id := range ids {
			p.interrupt(id, ErrPauseRequested)
		}
	})
	p.produce(ctx, bg)
	stopPause()
	stopReady()
	close(p.jobs)
	runners.Wait()
	close(p.writes)
	writer.Wait()
	stopMaint()
	maint.Wait()
	if err := p.store.WorkerDelete(bg, p.cfg.ID); err != nil {
		p.logger.Warn("Could not deregister worker", "error", err)
	}
	if hold != nil {
		_ = hold.Close(bg)
	}
	p.logger.Info("Worker pool stopped")
	return nil
}

// taskLogger is made only where something is logged: attributes cost
// formatting on every task otherwise.
func (p *Pool) taskLogger(t *task.Task) *slog.Logger {
	return p.logger.With("task_id", t.ID, "kind", t.Kind, "attempt", t.Attempt)
}

// busyCount mirrors the producer's count of running handlers for Busy
// (metrics, worker heartbeats); only the producer writes it.
type busyCount struct {
	mu sync.Mutex
	n  int
}

func (b *busyCount) set(n int) { b.mu.Lock(); b.n = n; b.mu.Unlock() }
func (b *busyCount) get() int  { b.mu.Lock(); defer b.mu.Unlock(); return b.n }

func hostname() string {
	h, _ := os.Hostname()
	return h
}
