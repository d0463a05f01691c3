package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
)

// approvalDecide is the inbox's approve/reject form. A decision that can no
// longer be taken (decided by someone else, expired) shows on the inbox
// instead of an error page.
func (h *Handler) approvalDecide(c echo.Context) error {
	decision := c.FormValue("decision")
	if decision != "approve" && decision != "reject" {
		return errInvalid("decision", "decision must be approve or reject")
	}
	_, err := h.decideApproval(c, c.Param("task_id"), c.Param("approval_id"), decision == "approve", c.FormValue("comment"))
	var apiErr *APIError
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusConflict || apiErr.Status == http.StatusForbidden) {
		p, lerr := h.loadInbox(c.Request().Context(), userOf(c))
		if lerr != nil {
			return lerr
		}
		p.CSRFToken, p.Flash, p.FlashError = csrfToken(c), apiErr.Message, true
		return h.renderInbox(c, apiErr.Status, p)
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/approvals?decided="+decision)
}
