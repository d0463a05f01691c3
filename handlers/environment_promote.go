package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// environmentPromote is the environments page's "Promote to …" form.
func (h *Handler) environmentPromote(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return h.renderEnvironments(c, http.StatusBadRequest, "The form did not parse.")
	}
	req := promoteRequest{Pipeline: form.Get("pipeline"), From: form.Get("from"), To: form.Get("to"), Team: form.Get("team"),
		Target: map[string]any{}}
	for k, vs := range form {
		if name, ok := strings.CutPrefix(k, "target."); ok && len(vs) > 0 {
			req.Target[name] = vs[0]
		}
	}
	if r := strings.TrimSpace(form.Get("override_reason")); r != "" {
		req.Override = &struct {
			Reason string `json:"reason"`
		}{r}
	}
	t, _, err := h.promote(c.Request().Context(), userOf(c), req, "", nil)
	if err != nil {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			return err
		}
		return h.renderEnvironments(c, ae.Status, "Not promoted: "+ae.Message)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/tasks/%s", t.ID))
}
