package handlers

import (
	"context"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// inboxLimit bounds the page; the oldest decisions come first.
const inboxLimit = 100

func (h *Handler) approvalInbox(c echo.Context) error {
	p, err := h.loadInbox(c.Request().Context(), userOf(c))
	if err != nil {
		return err
	}
	p.CSRFToken = csrfToken(c)
	switch c.QueryParam("decided") {
	case "approve":
		p.Flash = "Approved."
	case "reject":
		p.Flash = "Rejected; the task is being undone."
	}
	return h.renderInbox(c, http.StatusOK, p)
}

// renderInbox renders the inbox page; its list is the navigation's badge
// count too (both are bounded at 100), so the layout need not count again.
func (h *Handler) renderInbox(c echo.Context, status int, p pages.ApprovalInboxProps) error {
	c.Set(approvalCountKey, len(p.Items))
	return h.render(c, status, "Needs my approval", "approvals", pages.ApprovalInbox(p))
}

// loadInbox gathers the viewer's pending decisions, the approvals their
// own tasks wait for and, for the teams where they may resolve them, the
// tasks in needs_attention.
func (h *Handler) loadInbox(ctx context.Context, u *auth.User) (pages.ApprovalInboxProps, error) {
	var p pages.ApprovalInboxProps
	items, waiting, err := h.store.ApprovalsPending(ctx, u.ID, inboxLimit)
	if err != nil {
		return p, err
	}
	// Both lists in one pass, so their previous deploys are one statement.
	all, err := h.inboxItems(ctx, slices.Concat(items, waiting))
	if err != nil {
		return p, err
	}
	p.Items, p.Waiting = all[:len(items):len(items)], all[len(items):]
	resolve := u.TeamsWhereMay(task.ActResolve)
	if p.IsAdmin = len(resolve) > 0; p.IsAdmin {
		tasks, _, err := h.store.TaskList(ctx, store.TaskListParams{TeamIDs: resolve, State: "needs_attention"})
		if err != nil {
			return p, err
		}
		p.Attention = taskRows(h.pipelines, tasks, nil) // tasks that need attention have not completed
	}
	return p, nil
}
