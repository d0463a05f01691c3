package handlers

import (
	"context"
	"errors"
	"net/http"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// submit submits a task for u through the one submit function
// (saga.Submit: plan, environment rules, insert), with what the rules need
// to know of u, answering a refusal or an insert's error as the contract
// says.
func (h *Handler) submit(ctx context.Context, u *auth.User, s saga.Submission) (*task.Task, bool, error) {
	s.Protection.Rules = h.pipelines.Environments()
	s.Protection.MayOverride = u.May(s.Insert.TeamID, task.ActOverride)
	s.Protection.By = u.Email
	t, created, err := saga.Submit(ctx, h.store, s)
	if err != nil {
		return nil, false, insertError(refusalError(err))
	}
	return t, created, nil
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

// insertError maps the store's refusals of an insert to the contract's answer.
func insertError(err error) error {
	switch {
	case errors.Is(err, store.ErrIdempotencyConflict):
		return &APIError{Status: http.StatusConflict, Code: "idempotency_conflict",
			Message: "this Idempotency-Key was used with a different request body"}
	case errors.Is(err, store.ErrQueueFull):
		return &APIError{Status: http.StatusTooManyRequests, Code: "queue_full", RetryAfter: 5,
			Message: "the team's queue of pending tasks is full; retry later"}
	}
	return err
}
