package queue

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// Causes a job's context is cancelled with; read them with context.Cause.
var (
	// ErrCancelRequested: a user cancelled the task; compensate and end it cancelled.
	ErrCancelRequested = errors.New("cancel requested")
	// ErrShutdown: the process is stopping; release the task so another worker resumes it.
	ErrShutdown = errors.New("worker shutting down")
	// ErrLeaseLost: another worker owns the task now; stop without writing.
	ErrLeaseLost = errors.New("lease lost")
	// ErrDeadline: the task ran past its deadline; compensate and end it failed.
	ErrDeadline = errors.New("deadline exceeded")
)

// Handler runs claimed tasks of one kind.
type Handler interface {
	// Run works on the task until it ends, parks or is interrupted, and says
	// how the task should be left. ctx is cancelled with one of the causes
	// above; writes go through the job so they carry its lease token.
	Run(ctx context.Context, j *Job) Outcome
}

// Inliner is a Handler that can tell, from a claimed task alone, that its
// run will write nothing of its own before its outcome (no step row, event
// or state change has to be stored first) and will not wait. The pool runs
// such a task inside the transaction that claims it, with no lease, and
// writes its outcome in the claim's own statement: one write of the task
// row instead of two. A run that tries to write anyway (Job.Write, Flush)
// is discarded and the task goes the leased way, so the check may be
// optimistic as long as the handler's in-memory work can be repeated.
type Inliner interface {
	Inline(t *task.Task) bool
}

// ErrInlineWrite is what Job.Write and Job.Flush return in a run inside a
// claim: the run is discarded and the task is leased and run again.
var ErrInlineWrite = errors.New("a run inside its claim cannot write; running the task again under a lease")

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, j *Job) Outcome

// Run calls f.
func (f HandlerFunc) Run(ctx context.Context, j *Job) Outcome { return f(ctx, j) }

// Outcome is how a handler leaves its task.
type Outcome struct {
	// State: completed, failed, cancelled, needs_attention, awaiting_approval,
	// awaiting_input, scheduled (with RunAfter), or pending/compensating to
	// hand the task back (another worker resumes it).
	State    task.State
	Error    string
	Result   json.RawMessage
	RunAfter *time.Time
	// Message describes the final transition in its event.
	Message string
	// Written: the handler already recorded the task's new state and gave
	// up the lease itself (parking for an approval); the pool writes nothing.
	Written bool
}

// Job is a claimed task as its handler sees it.
type Job struct {
	Task *task.Task

	store  *store.Store
	mu     sync.Mutex
	events []task.Event
	// held-back step rows, one per index: a slice searched linearly, as a
	// run holds back a few rows at a time and a map per job cost a
	// kilobyte a task on the burn-down's hot path
	steps  []store.StepSave
	ctx    context.Context // cancelled with the causes above
	cancel context.CancelCauseFunc
	// flushMu keeps the job's writes in order: a background flush and the
	// handler's own write never race, so seqs follow causality.
	flushMu sync.Mutex

	stopOnce  sync.Once
	stop      chan struct{}
	stopCause error

	// inline: the run is inside the claim (Inliner); wrote: it tried to
	// write, so it is discarded.
	inline bool
	wrote  bool
}

// refuseInline reports (and records) a write attempted inside a claim.
func (j *Job) refuseInline() bool {
	if !j.inline {
		return false
	}
	j.mu.Lock()
	j.wrote = true
	j.mu.Unlock()
	return true
}

// interrupt cancels the job's context with cause; shutdown and a lost lease
// also close Stopping, which work that must outlive a cancel (compensation)
// still obeys.
func (j *Job) interrupt(cause error) {
	j.cancel(cause)
	if errors.Is(cause, ErrShutdown) || errors.Is(cause, ErrLeaseLost) {
		j.stopOnce.Do(func() { j.stopCause = cause; close(j.stop) })
	}
}

// Stopping is closed when the worker shuts down or loses the lease: the
// job must stop even work it does after a cancel, such as compensating.
func (j *Job) Stopping() <-chan struct{} { return j.stop }

// StopCause is why Stopping closed: ErrShutdown or ErrLeaseLost (nil while open).
func (j *Job) StopCause() error {
	select {
	case <-j.stop:
		return j.stopCause
	default:
		return nil
	}
}

// Token is the lease token every write about this task must carry.
func (j *Job) Token() string { return j.Task.LeaseToken }

// Store is the store, for handlers' own fenced writes (steps, artifacts).
func (j *Job) Store() *store.Store { return j.store }

// Emit buffers an event; it is written, with the next seqs, at the next
// Flush or with the task's final state, whichever comes first. Buffering
// lets a fast handler write all of its events in the same statement as its
// final state.
func (j *Job) Emit(e task.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

// SaveStep holds back a step row, to be written whole with the next Flush,
// Write or the task's final state. For steps whose action has no side
// effect: nothing needs to be stored before they run. A later save of the
// same step replaces the earlier one (keeping its Started/Finished marks).
func (j *Job) SaveStep(s store.StepSave) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.saveStepLocked(s)
}

func (j *Job) saveStepLocked(s store.StepSave) {
	if i := j.heldStepLocked(s.Idx); i >= 0 {
		prev := j.steps[i]
		s.Started = s.Started || prev.Started
		s.Finished = s.Finished || prev.Finished
		j.steps[i] = s
		return
	}
	j.steps = append(j.steps, s)
}

// heldStepLocked is the position of step idx's held-back row, or -1.
func (j *Job) heldStepLocked(idx int) int {
	for i := range j.steps {
		if j.steps[i].Idx == idx {
			return i
		}
	}
	return -1
}

// Flush writes buffered events and held-back steps now (a long step
// reporting progress). A lost lease cancels the job with ErrLeaseLost and
// returns it.
func (j *Job) Flush(ctx context.Context) error {
	if j.refuseInline() {
		return ErrInlineWrite
	}
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	return j.flushLocked(ctx)
}

func (j *Job) flushLocked(ctx context.Context) error {
	evs, steps := j.takeEvents(), j.takeSteps()
	if len(evs) == 0 && len(steps) == 0 {
		return nil
	}
	err := j.store.TaskFlush(ctx, j.Task.ID, j.Token(), steps, evs)
	if errors.Is(err, store.ErrLeaseLost) {
		j.interrupt(ErrLeaseLost)
		return ErrLeaseLost
	}
	if err != nil {
		// Keep them for the next try so nothing is lost.
		j.Requeue(evs)
		j.mu.Lock()
		for _, st := range steps {
			if j.heldStepLocked(st.Idx) < 0 { // not saved again since
				j.saveStepLocked(st)
			}
		}
		j.mu.Unlock()
	}
	return err
}

// Write runs a handler's own fenced write once the held-back steps are
// stored, handing it the buffered events to write in the same statement
// (they go back to the buffer when it fails for any reason but a lost
// lease). Background flushes wait meanwhile, so seqs stay in causal order.
func (j *Job) Write(ctx context.Context, write func(buffered []task.Event) error) error {
	if j.refuseInline() {
		return ErrInlineWrite
	}
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	j.mu.Lock()
	held := len(j.steps) > 0
	j.mu.Unlock()
	if held {
		if err := j.flushLocked(ctx); err != nil {
			return err
		}
	}
	evs := j.takeEvents()
	err := write(evs)
	if errors.Is(err, store.ErrLeaseLost) {
		j.interrupt(ErrLeaseLost)
	} else if err != nil {
		j.Requeue(evs)
	}
	return err
}

// Drain takes the buffered events, for a handler that writes them itself
// with its next state change (one statement instead of two).
func (j *Job) Drain() []task.Event { return j.takeEvents() }

// Requeue puts events back at the front of the buffer (their write failed).
func (j *Job) Requeue(evs []task.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(evs, j.events...)
}

func (j *Job) takeSteps() []store.StepSave {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.steps) == 0 {
		return nil
	}
	out := j.steps
	j.steps = nil
	return out
}

func (j *Job) takeEvents() []task.Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	evs := j.events
	j.events = nil
	return evs
}
