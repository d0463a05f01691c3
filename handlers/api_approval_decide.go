package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
)

type decisionRequest struct {
	Comment string `json:"comment"`
}

func (h *Handler) apiApprovalApprove(c echo.Context) error { return h.apiApprovalDecide(c, true) }
func (h *Handler) apiApprovalReject(c echo.Context) error  { return h.apiApprovalDecide(c, false) }

func (h *Handler) apiApprovalDecide(c echo.Context, approve bool) error {
	var req decisionRequest
	if c.Request().ContentLength != 0 {
		if _, err := readJSON(c, &req); err != nil {
			return err
		}
	}
	a, err := h.decideApproval(c, c.Param("id"), c.Param("approval_id"), approve, req.Comment)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// decideApproval is shared by the API, the WebSocket and the page. An
// unknown task is 404; an approval the task does not have is, like a decided
// or expired one, not pending: 409 (contract §3).
func (h *Handler) decideApproval(c echo.Context, taskID, approvalID string, approve bool, comment string) (*store.Approval, error) {
	comment, err := personText("comment", comment, 0)
	if err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	u := userOf(c)
	t, err := h.store.TaskGet(ctx, u.TeamIDs(), taskID)
	if err != nil {
		return nil, err
	}
	a, err := h.store.ApprovalDecide(ctx, store.ApprovalDecideParams{
		TeamIDs: []string{t.TeamID}, TaskID: taskID, ApprovalID: approvalID, Approve: approve,
		ActorID: u.ID, Actor: u.Email, ActorRole: string(u.RoleIn(t.TeamID)), Comment: comment,
	})
	switch {
	case errors.Is(err, store.ErrForbidden):
		return nil, &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: err.Error()}
	case errors.Is(err, store.ErrAlreadyApproved):
		return nil, &APIError{Status: http.StatusConflict, Code: "conflict", Message: "you already approved this deploy; another reviewer must decide"}
	case errors.Is(err, store.ErrConflict):
		return nil, &APIError{Status: http.StatusConflict, Code: "conflict", Message: "this approval is not pending (already decided, expired, superseded or unknown)"}
	case err != nil:
		return nil, err
	}
	return a, nil
}
