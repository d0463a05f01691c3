// Package saga runs deploy tasks: a pipeline's steps as a saga. Every step's
// state is persisted before and after its action, so a resumed task skips
// completed steps and re-runs the interrupted one with the same idempotency
// key. Steps retry with backoff; parallel groups join all, any or a quorum;
// risky steps park the task for an approval (holding no worker); on failure
// or cancel the completed steps are compensated in reverse order, and a
// compensation that keeps failing escalates the task to needs_attention.
package saga

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// ArtifactSink keeps actions' whole output (workflow/artifact implements it).
type ArtifactSink interface {
	Create(ctx context.Context, taskID, teamID string, stepIdx int, name string, secrets []string) (ArtifactWriter, error)
}

// ArtifactWriter receives one artifact's bytes; Close returns its id.
type ArtifactWriter interface {
	io.Writer
	Close() (string, error)
}

// Config configures a Runner. Zero values mean the defaults.
type Config struct {
	Catalog   *pipeline.Catalog
	Actions   action.Registry
	Artifacts ArtifactSink // nil: outputs are not kept
	// RetryBase is the first retry's backoff (then 2x, 4x… with jitter),
	// default 1s; RetryMax caps it, default 1024 × RetryBase.
	RetryBase time.Duration
	RetryMax  time.Duration
	// LogRate caps step.log events per step per second (default 50); the
	// whole output is in the artifact anyway.
	LogRate int
	// FlushInterval is how often buffered events are written while a step
	// runs (default 250ms).
	FlushInterval time.Duration
	// Secrets returns the values to redact from outputs (server secrets).
	Secrets func() []string
	// Freezes returns the team's freezes of an environment made through
	// the API that hold at a time or start within a day; nil: none (the
	// catalog's recurring windows still hold).
	Freezes func(ctx context.Context, teamID, env string, at time.Time) ([]environment.Span, error)
	Logger  *slog.Logger
}

// Runner is the queue handler for deploy tasks.
type Runner struct {
	cfg Config
}

// NewRunner returns a runner.
func NewRunner(cfg Config) *Runner {
	cfg.RetryBase = cmp.Or(cfg.RetryBase, time.Second)
	cfg.RetryMax = cmp.Or(cfg.RetryMax, cfg.RetryBase<<10)
	cfg.LogRate = cmp.Or(cfg.LogRate, 50)
	cfg.FlushInterval = cmp.Or(cfg.FlushInterval, 250*time.Millisecond)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Actions == nil {
		cfg.Actions = action.Registry{}
	}
	if _, ok := cfg.Actions["noop"]; !ok {
		cfg.Actions["noop"] = action.Noop
	}
	return &Runner{cfg: cfg}
}

// errInterrupted: the worker is stopping or lost the lease; leave the task
// as it is for the next owner.
var errInterrupted = errors.New("interrupted")

// run is one execution of a task by this worker.
type run struct {
	r       *Runner
	j       *queue.Job
	ctx     context.Context // cancelled by cancel, deadline, shutdown, lost lease
	p       *pipeline.Pipeline
	params  map[string]any
	stages  []pipeline.Stage
	total   int
	secrets []string

	mu    sync.Mutex
	steps map[int]*store.StepRow
	plan  map[int]pipeline.PlannedStep
	// keysStored: every step row, with its idempotency key, is stored, so
	// an action may run without waiting for a write (invariant 4).
	keysStored atomic.Bool
	// endUnstored: a step or compensation ended since the run's last own
	// write, so the next action may not start before a write stores that
	// end (contract §2 "Resuming").
	endUnstored atomic.Bool

	flushOnce   sync.Once
	stopFlusher func() // set by startFlusher; no-op until then
}

// Run implements queue.Handler.
func (r *Runner) Run(ctx context.Context, j *queue.Job) queue.Outcome {
	t := j.Task
	p, ok := r.cfg.Catalog.Get(t.Pipeline)
	if !ok {
		return queue.Outcome{State: task.StateFailed, Error: fmt.Sprintf("pipeline %q is not available on this server", t.Pipeline)}
	}
	params, ferr := p.Validate(t.Params)
	if ferr != nil {
		return queue.Outcome{State: task.StateFailed, Error: "parameters no longer valid for this pipeline: " + ferr.Error()}
	}
	stages, total, err := p.Plan(params)
	if err != nil {
		return queue.Outcome{State: task.StateFailed, Error: err.Error()}
	}
	rn := &run{r: r, j: j, ctx: ctx, p: p, params: params, stages: stages, total: total,
		steps: map[int]*store.StepRow{}, plan: map[int]pipeline.PlannedStep{}, stopFlusher: func() {}}
	rn.secrets = secretValues(p, params)
	if r.cfg.Secrets != nil {
		rn.secrets = append(rn.secrets, r.cfg.Secrets()...)
	}

	defer func() { rn.stopFlusher() }() // the flusher may start later
	return rn.redactOutcome(rn.walk())
}

// walk runs the task's stages from where they stand to an outcome.
func (rn *run) walk() queue.Outcome {
	t := rn.j.Task
	rn.initSteps()
	if t.State == task.StateCompensating {
		return rn.finishWithCompensation(t.CancelRequested, derefOr(t.Error, "cancelled"))
	}
	if held := rn.frozen(); held != nil {
		return *held
	}
	for _, st := range rn.stages {
		park, err := rn.stage(st)
		if park != nil {
			return *park
		}
		if err != nil {
			if errors.Is(err, errInterrupted) || store.Transient(err) {
				return rn.interruptedOutcome(err)
			}
			cancelled := errors.Is(context.Cause(rn.ctx), queue.ErrCancelRequested)
			if park := rn.askOnFailure(err); park != nil && !cancelled {
				return *park
			}
			return rn.finishWithCompensation(cancelled, err.Error())
		}
	}
	return rn.completed()
}

// frozen parks a task that has not started a step while its environment
// is frozen (contract §9): it waits, scheduled, for the freeze's end,
// holding no worker, and is checked again then. A task whose override
// broke the glass at submit starts anyway; one that started a step
// finishes.
func (rn *run) frozen() *queue.Outcome {
	t := rn.j.Task
	if t.Environment == "" || len(t.Override) > 0 || t.CancelRequested {
		return nil
	}
	for _, row := range rn.steps {
		if row.State != task.StepPending {
			return nil
		}
	}
	now := time.Now()
	var api []environment.Span
	if rn.r.cfg.Freezes != nil {
		var err error
		if api, err = rn.r.cfg.Freezes(rn.ctx, t.TeamID, t.Environment, now); err != nil {
			// a database fault is not the task's: hand it back
			return &queue.Outcome{}
		}
	}
	hold, frozen := rn.r.cfg.Catalog.Environments().Get(t.Environment).Frozen(api, now)
	if !frozen {
		return nil
	}
	// its run_at stays what it was asked for; the hold is its own
	until := hold.Until.UTC()
	return &queue.Outcome{State: task.StateScheduled, RunAfter: t.RunAt, HeldUntil: &until,
		Message: fmt.Sprintf("Held: %s is frozen (%s) until %s", t.Environment, hold.Reason, words.At(until, now))}
}

// initSteps loads the step rows the submit and earlier runs stored (the
// claim read them) and makes any missing ones, with their idempotency
// keys. New rows ride with the task's next write, which is stored before
// any action runs: a step's start is flushed before its action while a new
// row is not stored (invariant 4), and a resumed task reuses the stored
// keys.
func (rn *run) initSteps() {
	rn.keysStored.Store(true)
	for i := range rn.j.Steps {
		row := rn.j.Steps[i]
		rn.steps[row.Idx] = &row
	}
	for _, st := range rn.stages {
		for _, ps := range st.Steps {
			rn.plan[ps.Index] = ps
			if _, ok := rn.steps[ps.Index]; ok {
				continue
			}
			// a task submitted before its steps were stored with it, or
			// whose pipeline gained steps since
			row := store.StepRow{Idx: ps.Index, Name: ps.Name, State: task.StepPending,
				IdempotencyKey: stepKey(rn.j.Task.ID, rn.j.Task.Team, rn.params, ps)}
			rn.steps[ps.Index] = &row
			rn.j.SaveStep(saveOf(row))
			rn.keysStored.Store(false)
		}
	}
}

func (rn *run) completed() queue.Outcome {
	outputs := map[string]json.RawMessage{}
	rn.mu.Lock()
	for _, row := range rn.steps {
		if row.State == task.StepCompleted && len(row.Output) > 0 {
			outputs[row.Name] = row.Output
		}
	}
	rn.mu.Unlock()
	return queue.Outcome{State: task.StateCompleted, Result: stepsResult(outputs), Message: "Task completed"}
}

// stepsResult is a completed task's result, {"steps":{name: output, …}}
// with names in order, as json.Marshal would write it, without reflection
// on every task. Outputs are valid JSON (execute checks them).
func stepsResult(outputs map[string]json.RawMessage) json.RawMessage {
	names := slices.Sorted(maps.Keys(outputs))
	b := append(make([]byte, 0, 64), `{"steps":{`...)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		if plainJSONString(name) {
			b = append(append(append(b, '"'), name...), '"')
		} else {
			key, _ := json.Marshal(name)
			b = append(b, key...)
		}
		b = append(append(b, ':'), outputs[name]...)
	}
	return append(b, "}}"...)
}

// plainJSONString: s needs no escaping in JSON (printable ASCII, no quote,
// backslash or character json.Marshal escapes for HTML).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// interruptedOutcome leaves the task for the next owner: on shutdown, or a
// database fault (never the task's failure, invariant 10), the pool hands
// it back; on a lost lease it writes nothing.
func (rn *run) interruptedOutcome(err error) queue.Outcome {
	if rn.j.StopCause() == nil && !errors.Is(err, errInterrupted) && !store.Transient(err) {
		return queue.Outcome{State: task.StateFailed, Error: err.Error()}
	}
	return queue.Outcome{} // the pool releases it (or drops it when the lease is gone)
}

// render renders a step's `with` for ps (renderStep).
func (rn *run) render(with map[string]any, ps pipeline.PlannedStep) (map[string]any, error) {
	return renderStep(with, rn.j.Task.ID, rn.j.Task.Team, rn.params, ps)
}

// data is what templates in `with` see.
func (rn *run) data(ps pipeline.PlannedStep) map[string]any {
	return templateData(rn.j.Task.ID, rn.j.Task.Team, rn.params, ps)
}

// startFlusher writes what is buffered every FlushInterval from the first
// action on, so live viewers see progress (logs, a step's end, a retry's
// wait) while the task's next write is still to come. A timer, not a
// goroutine: most runs end before it first fires.
func (rn *run) startFlusher() {
	rn.flushOnce.Do(func() {
		var mu sync.Mutex
		var flushing sync.WaitGroup
		stopped := false
		var tick *time.Timer
		mu.Lock() // the timer may fire before tick is assigned
		defer mu.Unlock()
		tick = time.AfterFunc(rn.r.cfg.FlushInterval, func() {
			mu.Lock()
			if stopped {
				mu.Unlock()
				return
			}
			flushing.Add(1)
			mu.Unlock()
			defer flushing.Done()
			select {
			case <-rn.j.Stopping():
				return
			default:
			}
			_ = rn.j.Flush(context.WithoutCancel(rn.ctx))
			mu.Lock()
			if !stopped {
				tick.Reset(rn.r.cfg.FlushInterval)
			}
			mu.Unlock()
		})
		rn.stopFlusher = func() {
			mu.Lock()
			stopped = true
			tick.Stop()
			mu.Unlock()
			flushing.Wait() // a flush under way ends before the run writes on
		}
	})
}

// change is one change of a step (Idx > 0) and/or of the task.
type change struct {
	Idx   int            // 0: no step change (task state and events only)
	State task.StepState // new step state
	// Start marks the step running: attempt + 1, started_at = now.
	Start bool
	// StartCompensation: compensation_attempt + 1.
	StartCompensation bool
	// Finish sets finished_at (forward steps) or compensated_at.
	Finish    bool
	Output    json.RawMessage
	Error     *string
	TaskState task.State // "" keeps the task's state
	Events    []task.Event
}

// write records c in the run's copy of the step and buffers it, with its
// events, for the task's next write. A change that something must find
// stored is written at once, before the caller goes on:
//   - a change of the task's state (invariant 6);
//   - an action's start (a step's or a compensation's) when a step or a
//     compensation ended since the run last wrote, or the run's new step
//     rows are not stored yet: the end of step N is committed before step
//     N+1's action runs, so a task resumed after a crash never runs a
//     step again whose completion was already decided (contract §2
//     "Resuming", invariant 4), and an action runs only once its
//     idempotency key is stored.
//
// The end of a step and its successor's start share one write. The first
// action of a run starts without one (its key was stored with the task),
// and a task's last step's end rides with the outcome, the final write.
// Progress that decides nothing (a retry's wait, a step's start after a
// stored end) rides with the next write or the background flush. A write
// that cannot be made gives the task up: errInterrupted.
func (rn *run) write(c change) error {
	rn.redactChange(&c)
	for _, e := range c.Events {
		rn.j.Emit(e)
	}
	if c.Idx > 0 {
		rn.j.SaveStep(saveOf(rn.apply(c, time.Now())))
	}
	if c.TaskState != "" {
		rn.j.SetState(c.TaskState)
	}
	if c.Finish || c.State == task.StepSkipped {
		rn.endUnstored.Store(true)
	}
	starts := c.Start || c.StartCompensation
	if c.TaskState == "" && !starts {
		return nil
	}
	if c.TaskState == "" && !rn.mustStore() {
		return nil
	}
	return rn.store()
}

// mustStore: an action may not start before a write: a step or
// compensation ended since the run last wrote, or its new step rows (keys)
// are not stored yet.
func (rn *run) mustStore() bool {
	return rn.endUnstored.Load() || !rn.keysStored.Load()
}

// settle stores what must be stored before the next action starts (an
// ended step, new keys), so a caller can then check whether it may start
// one (the worker may have begun to drain meanwhile) with nothing left to
// write between that check and the action.
func (rn *run) settle() error {
	if !rn.mustStore() {
		return nil
	}
	return rn.store()
}

// store writes what is buffered now. endUnstored is cleared before the
// write: an end recorded meanwhile (a parallel branch) sets it again and
// its own successor writes once more. Flush waits for a background flush
// under way, so what that flush took is committed too when this returns.
func (rn *run) store() error {
	rn.endUnstored.Store(false)
	if err := rn.j.Flush(context.WithoutCancel(rn.ctx)); err != nil {
		return errInterrupted
	}
	rn.keysStored.Store(true)
	return nil
}

// redactChange hides secret values in a step's error (action errors may
// quote a URL or a command line); events are redacted as they are made
// (event). Step outputs stay as the action gave them (compensations read
// them; people see them only through the redacted result).
func (rn *run) redactChange(c *change) {
	if c.Error != nil && len(rn.secrets) > 0 {
		e := redact(*c.Error, rn.secrets)
		c.Error = &e
	}
}

// redactOutcome hides secret values in the task's error, final message and
// result (the steps' outputs).
func (rn *run) redactOutcome(out queue.Outcome) queue.Outcome {
	out.Error = redact(out.Error, rn.secrets)
	out.Message = redact(out.Message, rn.secrets)
	out.Result = redactJSON(out.Result, rn.secrets)
	return out
}

// apply records a change in the run's copy of the step row and returns the
// row: the one place a step row's fields are merged (the job's buffer and
// the store keep the latest row whole). at is when the run made the
// change: the step really started or ended then, whenever the batched
// write goes out.
func (rn *run) apply(c change, at time.Time) store.StepRow {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	row := rn.steps[c.Idx]
	row.State = c.State
	if c.Start {
		row.Attempt++
		row.Error = nil
		if row.StartedAt == nil {
			row.StartedAt = &at // the first attempt's start: a step's duration spans its retries
		}
	}
	if c.StartCompensation {
		row.CompensationAttempt++
	}
	switch {
	case c.Finish && compensationEnd(c.State):
		row.CompensatedAt = &at
	case c.Finish:
		row.FinishedAt = &at
	}
	if len(c.Output) > 0 {
		row.Output = c.Output
	}
	if c.Error != nil {
		row.Error = c.Error
	}
	return *row
}

func compensationEnd(state task.StepState) bool {
	return state == task.StepCompensated || state == task.StepCompensationFailed
}

// saveOf is a step row as the task's next write stores it.
func saveOf(row store.StepRow) store.StepSave {
	return store.StepSave{Idx: row.Idx, Name: row.Name, IdempotencyKey: row.IdempotencyKey, State: row.State,
		Attempt: row.Attempt, CompensationAttempt: row.CompensationAttempt, Output: row.Output, Error: row.Error,
		StartedAt: row.StartedAt, FinishedAt: row.FinishedAt, CompensatedAt: row.CompensatedAt}
}

func (rn *run) event(ps pipeline.PlannedStep, typ task.EventType, status task.Status, tool, msg string, data any) task.Event {
	raw, ok := data.(json.RawMessage) // built by the caller already
	if !ok && data != nil {
		raw, _ = json.Marshal(data)
	}
	// Messages and data quote errors, which may quote secret values.
	return task.Event{Type: typ, Status: status, Step: ps.Index, TotalStep: rn.total, StepName: ps.Name, Tool: tool,
		Message: redact(msg, rn.secrets), Data: redactJSON(raw, rn.secrets)}
}

// of is a step's place, "index/total", as event messages say it.
func (rn *run) of(ps pipeline.PlannedStep) string {
	return strconv.Itoa(ps.Index) + "/" + strconv.Itoa(rn.total)
}

// draining: the worker is stopping, so no new step or compensation starts.
func (rn *run) draining() bool {
	select {
	case <-rn.j.Draining():
		return true
	default:
		return false
	}
}

func (rn *run) row(idx int) store.StepRow {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return *rn.steps[idx]
}

func derefOr(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

// secretValues lists the values of parameters marked secret.
func secretValues(p *pipeline.Pipeline, params map[string]any) []string {
	var out []string
	for _, prm := range p.Params {
		if !prm.Secret {
			continue
		}
		if s, ok := params[prm.Name].(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// byCompletionDesc orders steps for compensation: the last completed first.
func byCompletionDesc(rows []store.StepRow) {
	sort.SliceStable(rows, func(i, k int) bool {
		a, b := rows[i].FinishedAt, rows[k].FinishedAt
		switch {
		case a != nil && b != nil && !a.Equal(*b):
			return a.After(*b)
		default:
			return rows[i].Idx > rows[k].Idx
		}
	})
}
