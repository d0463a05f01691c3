package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"flightdeck/internal/backoff"
	"flightdeck/internal/breaker"
	"flightdeck/internal/tracing"
	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// runStep runs a step until it completes or its retries are spent. ctx is
// the task's context or, inside a group, the group's (cancelled when the
// group joins). Each attempt is recorded before its action runs.
func (rn *run) runStep(ctx context.Context, ps pipeline.PlannedStep) error {
	failures := 0
	for {
		// The previous step's end is stored first (it may take a moment),
		// then the drain is checked: a stopping worker starts nothing new.
		if err := rn.settle(); err != nil {
			return err
		}
		if rn.draining() {
			return errInterrupted // the worker stops: start nothing new
		}
		row := rn.row(ps.Index)
		attempt := row.Attempt + 1
		if err := rn.write(change{Idx: ps.Index, State: task.StepRunning, Start: true, Events: []task.Event{
			rn.event(ps, task.EventStepStarted, task.StatusToolCall, ps.Step.Action,
				"Step "+rn.of(ps)+" "+ps.Name+" started (attempt "+strconv.Itoa(attempt)+")",
				json.RawMessage(`{"attempt":`+strconv.Itoa(attempt)+`}`)),
		}}); err != nil {
			return err
		}
		out, err := rn.execute(ctx, ps, ps.Step.Action, ps.Step.With, ps.Step.Timeout, false, attempt, row)
		if err == nil {
			return rn.write(change{Idx: ps.Index, State: task.StepCompleted, Finish: true, Output: out, Events: []task.Event{
				rn.event(ps, task.EventStepCompleted, task.StatusToolResult, ps.Step.Action,
					"Step "+rn.of(ps)+" "+ps.Name+" completed", nil),
			}})
		}
		if rn.j.StopCause() != nil || store.Transient(err) {
			// Leave the step running: the next owner re-runs it with the
			// same key. A database fault inside the action (the local
			// provider keeps its state there) is not the step's failure.
			return errInterrupted
		}
		if cause := context.Cause(ctx); cause != nil {
			// Cancelled by the user, the deadline, or the group joining.
			reason := interruption(rn, context.Cause(rn.ctx))
			if errors.Is(cause, errLoser) && rn.ctx.Err() == nil {
				reason = errLoser
			}
			msg := err.Error()
			if werr := rn.write(change{Idx: ps.Index, State: task.StepCancelled, Finish: true, Error: &msg, Events: []task.Event{
				rn.event(ps, task.EventStepFailed, task.StatusCancelled, ps.Step.Action, fmt.Sprintf("Step %s stopped: %s", ps.Name, reason), nil),
			}}); werr != nil {
				return werr
			}
			return reason
		}
		failures++
		var perm *action.Permanent
		if failures > ps.Step.Retries || errors.As(err, &perm) {
			msg := err.Error()
			if werr := rn.write(change{Idx: ps.Index, State: task.StepFailed, Finish: true, Error: &msg, Events: []task.Event{
				rn.event(ps, task.EventStepFailed, task.StatusError, ps.Step.Action, fmt.Sprintf("Step %s failed: %s", ps.Name, msg), nil),
			}}); werr != nil {
				return werr
			}
			return &stepFailure{ps: ps, attempt: attempt, err: err}
		}
		wait := rn.r.retryWait(failures, err)
		msg := fmt.Sprintf("Step %s failed (%s); retrying in %s (%d of %d retries)", ps.Name, err, words.Duration(wait), failures, ps.Step.Retries)
		if werr := rn.write(change{Idx: ps.Index, State: task.StepRunning, Events: []task.Event{
			rn.event(ps, task.EventStepRetrying, task.StatusLog, ps.Step.Action, msg, retryData(err, wait, attempt, attempt-failures+ps.Step.Retries+1)),
		}}); werr != nil {
			return werr
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// retryData is a step.retrying event's data: what failed, and when which
// attempt of how many comes next (pages show "retrying in 4 s (attempt 2
// of 4)"). Attempts interrupted by a crash do not count against retries,
// so the bound is this run's first attempt plus the retries.
func retryData(err error, wait time.Duration, attempt, maxAttempts int) map[string]any {
	return map[string]any{"error": err.Error(), "retry_in_ms": wait.Milliseconds(), "attempt": attempt,
		"next_attempt": attempt + 1, "max_attempts": maxAttempts, "next_attempt_at": time.Now().Add(wait).UTC().Format(time.RFC3339Nano)}
}

// retryWait is the backoff before retry n of a step or compensation that
// failed with err; while the http action's breaker for the host is open,
// until it half-opens (contract §6, breaker.RetryWait).
func (r *Runner) retryWait(n int, err error) time.Duration {
	return breaker.RetryWait(backoff.Exponential(r.cfg.RetryBase, r.cfg.RetryMax, n), err, time.Now())
}

// execute runs one attempt of an action (forward or compensation): renders
// its inputs, streams its output to step.log events and an artifact, and
// records tool.executed. The attempt is a span (contract §8) whose context
// the action gets, so its traceparent goes out with it.
func (rn *run) execute(ctx context.Context, ps pipeline.PlannedStep, name string, with map[string]any, timeout time.Duration,
	compensating bool, attempt int, row store.StepRow) (_ json.RawMessage, err error) {
	ctx, span := tracing.StartStep(ctx, rn.j.Task.ID, rn.p.Name, ps.Name, name, ps.Index, attempt, compensating)
	defer func() { tracing.End(span, rn.traceErr(err)) }()
	act, ok := rn.r.cfg.Actions[name]
	if !ok {
		return nil, &action.Permanent{Err: fmt.Errorf("action %s is not available on this server", name)}
	}
	rn.startFlusher()
	if compensating {
		// A compensation sees the forward step's inputs under its own.
		merged := map[string]any{}
		for k, v := range ps.Step.With {
			merged[k] = v
		}
		for k, v := range with {
			merged[k] = v
		}
		with = merged
	}
	rendered, err := rn.render(with, ps)
	if err != nil {
		return nil, &action.Permanent{Err: err}
	}
	if timeout <= 0 {
		timeout = pipeline.StepTimeoutDefault
	}
	key := row.IdempotencyKey
	if compensating {
		key += ":compensate"
	}
	logName := ps.Name + ".log"
	if compensating {
		logName = ps.Name + ".compensate.log"
	}
	var out io.Writer = io.Discard
	var art ArtifactWriter
	if rn.r.cfg.Artifacts != nil {
		if art, err = rn.r.cfg.Artifacts.Create(context.WithoutCancel(ctx), rn.j.Task.ID, rn.j.Task.TeamID, ps.Index, logName, rn.secrets); err == nil {
			out = art
		} else {
			rn.r.cfg.Logger.Warn("Could not create the output artifact", "task_id", rn.j.Task.ID, "error", err)
		}
	}
	logger := newLineLogger(rn, ps, rn.r.cfg.LogRate)
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, runErr := act.Run(actx, action.Input{
		TaskID: rn.j.Task.ID, Team: rn.j.Task.Team, Step: ps.Name, StepIndex: ps.Index, Attempt: attempt,
		IdempotencyKey: key, Compensating: compensating, With: rendered, Params: rn.params, Dir: rn.p.Dir,
		Timeout: timeout, Log: logger.line, Output: out, Previous: row.Output,
	})
	if runErr != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		runErr = fmt.Errorf("timed out after %s: %w", words.Duration(timeout), runErr)
	}
	logger.close()
	var artErr error
	if art != nil {
		id, err := art.Close()
		switch {
		case err != nil:
			// Never silent: the log shows it and the step's output (or
			// error) says so; the step itself did its work.
			artErr = err
			rn.r.cfg.Logger.Warn("Could not keep the output artifact", "task_id", rn.j.Task.ID, "step", ps.Name, "error", err)
			rn.j.Emit(rn.event(ps, task.EventStepLog, task.StatusError, name, "Output could not be kept as "+logName+": "+err.Error(), nil))
		case id != "":
			rn.j.Emit(rn.event(ps, task.EventArtifactCreated, task.StatusLog, name, "Output kept as "+logName, map[string]any{"artifact_id": id, "name": logName}))
		}
	}
	outcome := "ok"
	if runErr != nil {
		outcome = "error"
	}
	rn.j.Emit(rn.event(ps, task.EventToolExecuted, task.StatusToolResult, name, name+" finished: "+outcome,
		toolData{Tool: name, DurationMS: time.Since(start).Milliseconds(), Outcome: outcome, Compensating: compensating}.json()))
	if runErr != nil {
		if artErr != nil {
			runErr = fmt.Errorf("%w (its output was not kept: %v)", runErr, artErr)
		}
		return nil, runErr
	}
	if len(res) == 0 || !json.Valid(res) {
		res = json.RawMessage(`{}`)
	}
	if artErr != nil {
		res = withArtifactError(res, redact("output not kept as "+logName+": "+artErr.Error(), rn.secrets))
	}
	return res, nil
}

// withArtifactError adds "artifact_error" to a step's output object (an
// output that is not an object is wrapped as {"output":…}).
func withArtifactError(res json.RawMessage, msg string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(res, &obj) != nil || obj == nil {
		obj = map[string]json.RawMessage{"output": res}
	}
	obj["artifact_error"], _ = json.Marshal(msg)
	b, _ := json.Marshal(obj)
	return b
}

// traceErr is err as a span shows it: redacted, since spans leave the
// server.
func (rn *run) traceErr(err error) error {
	return tracing.Redacted(err, func(s string) string { return redact(s, rn.secrets) })
}

// toolData is the data of a tool.executed event, one per step attempt.
type toolData struct {
	Tool         string `json:"tool"`
	DurationMS   int64  `json:"duration_ms"`
	Outcome      string `json:"outcome"`
	Compensating bool   `json:"compensating"`
}

// json encodes d without reflection when its strings need no escaping
// (action names and outcomes are plain words); otherwise as json.Marshal
// does.
func (d toolData) json() json.RawMessage {
	if !plainWord(d.Tool) || !plainWord(d.Outcome) {
		b, _ := json.Marshal(d)
		return b
	}
	b := make([]byte, 0, 80+len(d.Tool))
	b = append(b, `{"tool":"`...)
	b = append(b, d.Tool...)
	b = append(b, `","duration_ms":`...)
	b = strconv.AppendInt(b, d.DurationMS, 10)
	b = append(b, `,"outcome":"`...)
	b = append(b, d.Outcome...)
	b = append(b, `","compensating":`...)
	b = strconv.AppendBool(b, d.Compensating)
	return append(b, '}')
}

// plainWord: s is safe inside a JSON string as it is.
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

// lineLogger turns output lines into step.log events, at most rate per
// second with a burst of twice that; what it drops is counted and said, and
// the artifact keeps everything.
type lineLogger struct {
	rn      *run
	ps      pipeline.PlannedStep
	rate    float64
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

func newLineLogger(rn *run, ps pipeline.PlannedStep, rate int) *lineLogger {
	return &lineLogger{rn: rn, ps: ps, rate: float64(rate), tokens: float64(2 * rate), last: time.Now()}
}

func (l *lineLogger) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.tokens = min(2*l.rate, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return
	}
	l.tokens--
	if l.dropped > 0 {
		l.emit(fmt.Sprintf("[%d lines not shown here; the full output is in the log artifact]", l.dropped), now)
		l.dropped = 0
	}
	l.emit(s, now)
}

// emit sends a line as a step.log event stamped at, when it was read (the
// write that stores it may come up to a flush later).
func (l *lineLogger) emit(s string, at time.Time) {
	s = strings.TrimRight(redact(s, l.rn.secrets), "\r\n")
	ev := l.rn.event(l.ps, task.EventStepLog, task.StatusLog, "", s, nil)
	ev.Time = at
	l.rn.j.Emit(ev)
}

func (l *lineLogger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 {
		l.emit(fmt.Sprintf("[%d lines not shown here; the full output is in the log artifact]", l.dropped), time.Now())
		l.dropped = 0
	}
}

// redactJSON is redact for a JSON document; should hiding a value break
// the document (a secret cut through an escape sequence), the whole
// document is withheld rather than shown or stored broken.
func redactJSON(b json.RawMessage, secrets []string) json.RawMessage {
	if len(b) == 0 || len(secrets) == 0 {
		return b
	}
	r := redact(string(b), secrets)
	if r == string(b) {
		return b
	}
	if !json.Valid([]byte(r)) {
		return json.RawMessage(`{"redacted":"[REDACTED]"}`)
	}
	return json.RawMessage(r)
}

// redact hides secret values in text that leaves the worker (events).
func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}
