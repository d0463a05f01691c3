package handlers

import (
	"context"
	"errors"
	"net/http"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// protect applies the rules of a deploy's environment to a submit that
// saga.NewDeploy filled in (every way of submitting calls it), answering
// a refusal as the contract says.
func (h *Handler) protect(ctx context.Context, u *auth.User, teamID string, in *store.TaskInsertParams, pl *pipeline.Pipeline,
	params map[string]any, o saga.Protection) error {
	o.Rules = h.pipelines.Environments()
	o.MayOverride = u.May(teamID, task.ActOverride)
	o.By = u.Email
	return refusalError(saga.ProtectDeploy(ctx, h.store, in, pl, params, o))
}

// refusalError maps an environment's refusal to the contract's answer.
func refusalError(err error) error {
	var r *saga.Refusal
	if !errors.As(err, &r) {
		return err
	}
	switch r.Code {
	case "invalid":
		return &APIError{Status: http.StatusUnprocessableEntity, Code: "invalid", Field: r.Field, Message: r.Message}
	case "forbidden":
		return &APIError{Status: http.StatusForbidden, Code: "forbidden", Field: r.Field, Message: r.Message}
	case "frozen":
		return &APIError{Status: http.StatusConflict, Code: "frozen", Message: r.Message, RetryAfter: saga.RetryAfterSeconds(r.RetryAfter)}
	}
	return &APIError{Status: http.StatusConflict, Code: r.Code, Message: r.Message}
}
