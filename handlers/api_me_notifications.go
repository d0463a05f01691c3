package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
)

// notifyEmail is the per-kind email switch of /api/v1/me/notifications
// (contract §12); a kind left out (or null) of a PUT keeps its value.
type notifyEmail struct {
	Approval  *bool `json:"approval"`
	Decision  *bool `json:"decision"`
	Attention *bool `json:"attention"`
	Ended     *bool `json:"ended"`
}

type notifyBody struct {
	Email *notifyEmail `json:"email"`
}

func (n *notifyEmail) changes() map[string]bool {
	out := map[string]bool{}
	for k, v := range map[string]*bool{"approval": n.Approval, "decision": n.Decision, "attention": n.Attention, "ended": n.Ended} {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func notifyJSON(p store.NotifyPrefs) map[string]any {
	return map[string]any{"email": map[string]bool(p)}
}

// apiNotifyGet answers the signed-in person's email choices.
func (h *Handler) apiNotifyGet(c echo.Context) error {
	p, err := h.store.NotifyGet(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, notifyJSON(p))
}

// apiNotifyPut changes them: unknown keys and values that are not true or
// false are refused with their field (readJSON).
func (h *Handler) apiNotifyPut(c echo.Context) error {
	var req notifyBody
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	if req.Email == nil {
		return errInvalid("email", `email is required: {"email":{"approval":true,"decision":true,"attention":true,"ended":true}}`)
	}
	p, err := h.store.NotifySet(c.Request().Context(), userOf(c).ID, req.Email.changes())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, notifyJSON(p))
}
