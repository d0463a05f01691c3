package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// Causes a job's context is cancelled with; read them with context.Cause.
var (
	// ErrCancelRequested: a user cancelled the task; compensate and end it cancelled.
	ErrCancelRequested = errors.New("cancel requested")
	// ErrShutdown: the process is stopping; release the task so another worker resumes it.
	ErrShutdown = errors.New("worker shutting down")
	// ErrLeaseLost: another worker owns the task now, or this one could not
	// write within its lease; stop without writing.
	ErrLeaseLost = errors.New("lease lost")
	// ErrDeadline: the task ran past its deadline; compensate and end it failed.
	ErrDeadline = errors.New("deadline exceeded")
	// ErrPauseRequested: a person asked the task to pause. It cancels
	// nothing: the job's PauseRequested says so, and the handler parks the
	// task once the step it is in ends.
	ErrPauseRequested = errors.New("pause requested")
)

// Handler runs claimed tasks of one kind.
type Handler interface {
	// Run works on the task until it ends, parks or is interrupted, and says
	// how the task should be left. ctx is cancelled with one of the causes
	// above; writes go through the job so they carry its lease token.
	Run(ctx context.Context, j *Job) Outcome
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, j *Job) Outcome

// Run calls f.
func (f HandlerFunc) Run(ctx context.Context, j *Job) Outcome { return f(ctx, j) }

// Outcome is how a handler leaves its task.
type Outcome struct {
	// State: completed, failed, cancelled, needs_attention, awaiting_approval,
	// awaiting_input, scheduled (with RunAfter), or pending/compensating to
	// hand the task back (another worker resumes it). Empty: hand it back.
	State    task.State
	Error    string
	Result   json.RawMessage
	RunAfter *time.Time
	// HeldUntil: with State scheduled, a freeze holds the task (which
	// started no step) until then; RunAfter stays its run_at
	// (store.TaskWrite.HeldUntil).
	HeldUntil *time.Time
	// Message describes the final transition in its event.
	Message string
	// What the task parks for, written with its state change: approvals
	// (awaiting_approval) or an agent's question (awaiting_input).
	Approvals *store.ApprovalPark
	Question  *store.QuestionPark
	// With State paused: the failed step a person must decide about
	// (guided failure; nil for a pause a person asked for), and how long
	// they have before the task rolls back.
	FailedStep      *task.FailedStep
	DecisionTimeout time.Duration
}

// Job is a claimed task as its handler sees it. Its writes are buffered
// (Emit, SaveStep, SaveAgent, SetState) and stored by Flush, or with the
// task's outcome, whichever comes first; a handler flushes before anything
// that must find them stored (an action's side effect, invariant 4). The
// job is a handler's only way to write its task: every write goes through
// the pool's batched writer, fenced by the lease token.
type Job struct {
	Task *task.Task
	// Steps are the step rows earlier runs of the task left (none on its
	// first run), as the claim read them.
	Steps []store.StepRow

	pool   *Pool
	ctx    context.Context // cancelled with the causes above
	cancel context.CancelCauseFunc
	span   trace.Span // the run's, claim to outcome (a no-op without tracing)

	mu  sync.Mutex
	buf store.TaskWrite // what the next write stores: events, steps (one per index), agent state, state
	// flushMu keeps the job's writes in order and one at a time: a
	// background flush and the handler's own never race, so seqs follow
	// causality and a writer batch never holds two writes of one task.
	flushMu sync.Mutex

	stopOnce  sync.Once
	stop      chan struct{}
	stopCause error
	drainOnce sync.Once
	draining  chan struct{}
	pause     atomic.Bool // a person asked the task to pause
	returned  time.Time   // when the handler returned (its slot freed)
}

func (p *Pool) newJob(bg context.Context, c store.Claimed) *Job {
	bg, span := tracing.StartRun(bg, c.Task.ID, string(c.Task.Kind), c.Task.Pipeline, c.Traceparent, c.Task.Attempt)
	ctx, cancel := context.WithCancelCause(bg)
	j := &Job{Task: c.Task, Steps: c.Steps, pool: p, ctx: ctx, cancel: cancel, span: span,
		stop: make(chan struct{}), draining: make(chan struct{})}
	// The claim wrote no event; the pick-up is told with the first write.
	data, _ := json.Marshal(map[string]any{"state": c.Task.State, "attempt": c.Task.Attempt, "worker": p.cfg.ID})
	j.buf.Events = []task.Event{{Type: task.EventTaskState, Status: task.StatusLog, Message: "Picked up by a worker", Data: data}}
	if c.Task.CancelRequested && c.Task.State == task.StateRunning {
		cancel(ErrCancelRequested)
	}
	// asked while the task waited to run again (handed back, rescued)
	j.pause.Store(c.Task.PauseRequested && c.Task.State == task.StateRunning)
	return j
}

// runJob runs the task's handler, then writes its outcome, reporting both
// moments to the producer.
func (p *Pool) runJob(j *Job) {
	out, panicked := p.runHandler(j.ctx, j)
	// The slot is free from here: the outcome is the task's final write,
	// and the producer may claim another task while it is stored.
	j.returned = time.Now()
	p.jobEvents <- jobEvent{j: j, kind: handlerReturned}
	wrote := p.complete(j, out, panicked)
	tracing.EndRun(j.span, string(wrote), out.Error)
	j.cancel(nil)
	p.jobEvents <- jobEvent{j: j, kind: jobReleased}
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

// complete writes a handler's outcome with whatever it left buffered, and
// releases the lease: the task ends, parks, or goes back to the queue.
// It returns the state it wrote ("" for none).
func (p *Pool) complete(j *Job, out Outcome, panicked bool) (wrote task.State) {
	t := j.Task
	cause := context.Cause(j.ctx)
	if stop := j.StopCause(); stop != nil {
		cause = stop // shutdown or a lost lease outranks an earlier cancel
	}
	if errors.Is(cause, ErrLeaseLost) {
		p.taskLogger(t).Warn("Lease lost; dropping the task without writing")
		return
	}
	state := out.State
	if panicked {
		// Counted like a worker that died: started again while attempts last.
		state = task.StatePending
		if t.Attempt >= t.MaxAttempts {
			state = task.StateFailed
		}
	}
	if errors.Is(cause, ErrShutdown) && !state.Terminal() && !parked(state) {
		state = ""
		out.Message = "Worker shutting down; handed back to the queue"
	}
	if state == "" || state == task.StateRunning {
		state = j.releaseState()
	}
	if from := j.currentState(); from != state && !task.CanTransition(from, state) {
		// A handler bug must not write a state its task cannot reach (a
		// compensating task never ends completed, invariant 5).
		p.taskLogger(t).Error("Handler asked for a state its task cannot move to", "from", from, "to", state)
		out.Error = fmt.Sprintf("internal error: a %s task cannot become %s", from, state)
		out.Message, out.Result = "", nil
		state = task.StateFailed
		if from == task.StateCompensating {
			state = task.StateNeedsAttention
		}
	}
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	w := j.take()
	w.State, w.Release, w.Result, w.RunAfter, w.BumpAttempt = state, true, out.Result, out.RunAfter, panicked
	if state == task.StateScheduled {
		w.HeldUntil = out.HeldUntil
	}
	if state == task.StatePaused {
		w.FailedStep, w.DecisionTimeout = out.FailedStep, out.DecisionTimeout
	}
	if out.Error != "" {
		w.Error = &out.Error
	}
	switch state {
	case task.StateAwaitingApproval:
		w.Approvals = out.Approvals
	case task.StateAwaitingInput:
		w.Question = out.Question
	}
	w.Events = append(w.Events, finalEvent(state, out))
	got, written, err := p.writeFinal(w)
	switch {
	case err != nil:
		p.taskLogger(t).Error("Could not record the task's outcome; the rescuer will re-queue it", "error", err)
	case !written:
		p.taskLogger(t).Warn("Lease lost before the outcome was written; another worker owns the task")
	default:
		p.published(t, state, time.Since(j.returned))
		wrote = state
		if got.CancelRequested && parked(state) && state != task.StateNeedsAttention {
			// A person cancelled while the handler parked the task: the
			// cancel wins (the rescuer's sweep is the backup if this fails).
			if _, err := p.store.TaskCancelStanding(context.WithoutCancel(j.ctx), []string{t.ID}, 1); err != nil {
				p.taskLogger(t).Warn("Could not apply a cancel that came while the task parked; the sweep will", "error", err)
			}
		}
	}
	return wrote
}

// published tells the benchmark that t changed (streams hear of it from
// the store's wake-ups: notify.Hub.Follow).
func (p *Pool) published(t *task.Task, state task.State, window time.Duration) {
	if state != "" && p.cfg.OnFinish != nil {
		p.cfg.OnFinish(t, state, window)
	}
}

// currentState is the task's state as its last write left it (or the
// state change buffered for the next one).
func (j *Job) currentState() task.State {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.buf.State != "" {
		return j.buf.State
	}
	return j.Task.State
}

// releaseState is where a handed-back task rests: compensating tasks stay
// compensating (claimable), everything else is pending.
func (j *Job) releaseState() task.State {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Task.State == task.StateCompensating || j.buf.State == task.StateCompensating {
		return task.StateCompensating
	}
	return task.StatePending
}

func parked(s task.State) bool {
	return s == task.StateAwaitingApproval || s == task.StateAwaitingInput || s == task.StateScheduled || s == task.StateNeedsAttention ||
		s == task.StatePaused
}

// finalEvent describes the transition an outcome makes.
func finalEvent(s task.State, out Outcome) task.Event {
	data, _ := json.Marshal(struct {
		State task.State `json:"state"`
		Error *string    `json:"error"`
	}{s, nilIfEmpty(out.Error)})
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
	if s == task.StatePaused {
		return pausedEvent(out)
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

// pausedEvent is a park's task.paused: for a failed step, what failed and
// until when a person may decide (the row's decision_expires_at is the
// database's; this is the worker's estimate of it, for the message).
func pausedEvent(out Outcome) task.Event {
	d := map[string]any{"state": task.StatePaused}
	msg, status := out.Message, task.StatusLog
	if out.FailedStep != nil {
		d["failed_step"] = out.FailedStep
		d["decision_timeout_s"] = out.DecisionTimeout.Seconds()
		status = task.StatusApproval
		if msg == "" {
			msg = fmt.Sprintf("Step %s failed; waiting for a decision: retry, skip or roll back", out.FailedStep.Name)
		}
	}
	if msg == "" {
		msg = "Task paused"
	}
	data, _ := json.Marshal(d)
	return task.Event{Type: task.EventTaskPaused, Status: status, Message: msg, Data: data}
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// interrupt cancels the job's context with cause; shutdown and a lost lease
// also close Stopping, which work that must outlive a cancel (compensation)
// still obeys.
func (j *Job) interrupt(cause error) {
	if errors.Is(cause, ErrPauseRequested) {
		j.pause.Store(true) // the step in progress goes on
		return
	}
	j.cancel(cause)
	if errors.Is(cause, ErrShutdown) || errors.Is(cause, ErrLeaseLost) {
		j.stopOnce.Do(func() { j.stopCause = cause; close(j.stop) })
	}
}

// drain closes Draining: the pool is stopping.
func (j *Job) drain() { j.drainOnce.Do(func() { close(j.draining) }) }

// Draining is closed when the pool stops: the job must start no new step
// (a step already running may finish within the grace period) and return,
// so its task is handed back with its completed steps kept.
func (j *Job) Draining() <-chan struct{} { return j.draining }

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

// PauseRequested reports whether a person asked the task to pause: the
// handler parks it (Outcome State paused) once the step it is in ends.
func (j *Job) PauseRequested() bool { return j.pause.Load() }

// Token is the lease token every write about this task must carry.
func (j *Job) Token() string { return j.Task.LeaseToken }

// Reads is what a handler may read of its task besides its claim. It
// writes through the job only.
type Reads interface {
	ApprovalLatest(ctx context.Context, taskID string, stepIdx int) (*store.Approval, error)
	AgentStateGet(ctx context.Context, taskID string) (*store.AgentState, error)
	AgentQuestionGet(ctx context.Context, taskID string, callSeq int) (*store.Question, error)
	AgentNotesAfter(ctx context.Context, taskID string, after int64) ([]store.AgentNote, error)
}

// Reads returns the store's reads a handler may make.
func (j *Job) Reads() Reads { return j.pool.store }

// Emit buffers an event for the next write.
func (j *Job) Emit(e task.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Events = append(j.buf.Events, e)
}

// SaveStep buffers a step row for the next write; a later save of the same
// step replaces it (a save is the whole row, as its handler keeps it).
func (j *Job) SaveStep(s store.StepSave) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range j.buf.Steps {
		if j.buf.Steps[i].Idx == s.Idx {
			j.buf.Steps[i] = s
			return
		}
	}
	j.buf.Steps = append(j.buf.Steps, s)
}

// SaveAgent buffers an agent task's state for the next write (the latest wins).
func (j *Job) SaveAgent(a store.AgentSave) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Agent = &a
}

// SetState buffers a state change of the task (it keeps its lease) for the
// next write.
func (j *Job) SetState(s task.State) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.State = s
}

// Flush stores what is buffered now, through the pool's batched writer
// (which retries database faults within the lease). A lost lease, or a
// write that could not be made within it, cancels the job with
// ErrLeaseLost and returns it: the task is given up, and another worker
// resumes it.
func (j *Job) Flush(ctx context.Context) error {
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	w := j.take()
	if len(w.Events) == 0 && len(w.Steps) == 0 && w.State == "" && w.Agent == nil {
		return nil
	}
	got, written, err := j.pool.write(w)
	switch {
	case err != nil:
		j.giveBack(w)
		j.pool.taskLogger(j.Task).Warn("Could not write within the lease; giving the task up", "error", err)
		j.interrupt(ErrLeaseLost)
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case !written:
		j.interrupt(ErrLeaseLost)
		return ErrLeaseLost
	}
	if w.State != "" {
		j.Task.State = w.State
	}
	j.learn(got)
	return nil
}

// learn hands on a person's request that a write found standing: a
// cancel's or a pause's notification may have gone to a process that did
// not hold the task yet, but the next write of the task always sees it,
// so a cancel racing a claim, a retry or a resume is never lost.
func (j *Job) learn(got store.Written) {
	switch {
	case got.CancelRequested && got.State == task.StateRunning:
		j.interrupt(ErrCancelRequested)
	case got.PauseRequested && got.State == task.StateRunning:
		j.interrupt(ErrPauseRequested)
	}
}

// take empties the buffer into a write of the task under its lease.
func (j *Job) take() store.TaskWrite {
	j.mu.Lock()
	defer j.mu.Unlock()
	w := j.buf
	w.ID, w.Token = j.Task.ID, j.Task.LeaseToken
	j.buf = store.TaskWrite{}
	return w
}

// giveBack puts what a failed write took back in front of anything
// buffered since (a step or agent state saved since is newer and wins).
func (j *Job) giveBack(w store.TaskWrite) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Events = append(w.Events, j.buf.Events...)
	for _, s := range w.Steps {
		if !slices.ContainsFunc(j.buf.Steps, func(cur store.StepSave) bool { return cur.Idx == s.Idx }) {
			j.buf.Steps = append(j.buf.Steps, s)
		}
	}
	if j.buf.Agent == nil {
		j.buf.Agent = w.Agent
	}
	if j.buf.State == "" {
		j.buf.State = w.State
	}
}
