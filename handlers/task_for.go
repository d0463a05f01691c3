package handlers

import (
	"context"
	"net/http"

	"flightdeck/internal/auth"
	"flightdeck/workflow/task"
)

// taskFor loads task id for u to take act on: not_found (404) when none of
// u's teams has it, forbidden (403) when u's role in its team may not take
// act (task.May). Every handler that acts on one task starts here, so the
// API, the sockets and the pages' forms refuse alike.
func (h *Handler) taskFor(ctx context.Context, u *auth.User, id string, act task.Act) (*task.Task, error) {
	t, err := h.store.TaskGet(ctx, u.TeamIDs(), id)
	if err != nil {
		return nil, err
	}
	if !u.May(t.TeamID, act) {
		return nil, forbiddenTo(act)
	}
	return t, nil
}

// forbiddenTo is the refusal of act to a role that may not take it, naming
// the roles that may, from the same table that refused.
func forbiddenTo(act task.Act) *APIError {
	return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: "your role does not allow this: it " + task.WhyNot(act)}
}
