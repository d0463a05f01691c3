package handlers

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// resumeRequest is the optional body of a resume: how, and why.
type resumeRequest struct {
	Action  string `json:"action"`
	Comment string `json:"comment"`
}

func (h *Handler) apiTaskResume(c echo.Context) error {
	var req resumeRequest
	if c.Request().ContentLength != 0 {
		if _, err := readJSON(c, &req); err != nil {
			return err
		}
	}
	t, err := h.resumeTask(c, c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toTaskJSON(t))
}

// resumeTask is shared by the API, the WebSocket and the page. Who may
// take which action is task.MayResume's rule, applied by the store under
// the task's lock, so two people deciding at once record one decision.
func (h *Handler) resumeTask(c echo.Context, id string, req resumeRequest) (*task.Task, error) {
	action := task.ResumeAction(req.Action)
	if action == "" {
		action = task.ResumeContinue
	}
	if !slices.Contains(task.ResumeActions, action) {
		return nil, errInvalid("action", "action must be continue, retry, skip or rollback")
	}
	comment, err := personText("comment", req.Comment, 0)
	if err != nil {
		return nil, err
	}
	req.Comment = comment
	ctx := c.Request().Context()
	u := userOf(c)
	t, err := h.store.TaskGet(ctx, u.TeamIDs(), id)
	if err != nil {
		return nil, err
	}
	t, err = h.store.TaskResume(ctx, store.TaskResumeParams{TeamIDs: []string{t.TeamID}, ID: id, Action: action, Comment: req.Comment,
		ActorID: u.ID, Actor: u.Email, ActorRole: string(u.RoleIn(t.TeamID))})
	if err != nil {
		return nil, runControlError(err)
	}
	return t, nil
}
