package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"flightdeck/internal/auth"
	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// rerun submits a new task like the finished task id (same kind, pipeline,
// params with their secrets, prompt, priority, attempts and deadline),
// created by u and naming id in rerun_of. It goes through the submit's
// own rules: today's pipeline validates the params, the pending bound and
// the idempotency key (idemKey, "" for none) hold. The page's Redeploy and
// Roll back are re-runs of an earlier deploy of the target.
func (h *Handler) rerun(ctx context.Context, u *auth.User, id, idemKey string) (t *task.Task, created bool, err error) {
	src, err := h.taskFor(ctx, u, id, task.ActRerun)
	if err != nil {
		return nil, false, err
	}
	if !src.State.Terminal() {
		return nil, false, &APIError{Status: http.StatusConflict, Code: "conflict",
			Message: "task " + src.ID + " is " + string(src.State) + "; only a finished task can be re-run"}
	}
	hash := sha256.Sum256([]byte("rerun\x00" + src.ID))
	p := store.TaskInsertParams{
		TeamID: src.TeamID, CreatedByID: u.ID, Kind: src.Kind, Priority: src.Priority, MaxAttempts: src.MaxAttempts,
		IdempotencyKey: idemKey, RequestHash: hash[:], MaxPending: h.cfg.MaxPending, RerunOf: src.ID,
		Traceparent: tracing.Traceparent(ctx),
	}
	if src.DeadlineAt != nil {
		p.DeadlineSeconds = max(1, int(src.DeadlineAt.Sub(src.CreatedAt)/time.Second))
	}
	sub := saga.Submission{Insert: p}
	switch src.Kind {
	case task.KindDeploy:
		err = h.rerunDeploy(ctx, src, &sub)
	case task.KindAgent:
		err = h.rerunAgent(src, &sub.Insert)
	default:
		err = errInvalid("kind", "task %s is of kind %q, which cannot be re-run", src.ID, src.Kind)
	}
	if err != nil {
		return nil, false, err
	}
	return h.submit(ctx, u, sub)
}

// rerunDeploy validates the deploy's params, secrets put back, against
// the pipeline as it is now.
func (h *Handler) rerunDeploy(ctx context.Context, src *task.Task, sub *saga.Submission) error {
	pl, ok := h.pipelines.Get(src.Pipeline)
	if !ok {
		return errInvalid("pipeline", "pipeline %q no longer exists, so task %s cannot be re-run", src.Pipeline, src.ID)
	}
	params := map[string]any{}
	if err := json.Unmarshal(src.Params, &params); err != nil {
		return errInvalid("params", "task %s has unreadable params", src.ID)
	}
	err := saga.RepeatSecrets(ctx, h.store, src, pl, params)
	if errors.Is(err, saga.ErrUnreadableParams) {
		return errInvalid("params", "task %s has unreadable params", src.ID)
	}
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(params)
	validated, ferr := pl.Validate(raw)
	if ferr != nil {
		return errInvalid(ferr.Field, "task %s's params no longer validate against pipeline %s: %s %s", src.ID, pl.Name, ferr.Field, ferr.Message)
	}
	sub.Pipeline, sub.Params, sub.Team = pl, validated, src.Team
	return nil
}

// rerunAgent checks the agent task's budgets against today's ceilings.
func (h *Handler) rerunAgent(src *task.Task, p *store.TaskInsertParams) error {
	if !h.cfg.AgentsEnabled() {
		return errInvalid("kind", "agent tasks need an LLM, and this server has none configured")
	}
	p.Prompt = src.Prompt
	var stored struct {
		Budgets *agentBudgets `json:"budgets"`
	}
	if len(src.Params) > 0 && json.Unmarshal(src.Params, &stored) == nil && stored.Budgets != nil {
		params, err := stored.Budgets.validate(h.cfg.Agent)
		if err != nil {
			return err
		}
		p.Params = params
	}
	return nil
}
