package handlers

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
)

// accountSave stores the page form's email choices: a kind is on when its
// box is checked (an unchecked box sends nothing, so every kind is set).
func (h *Handler) accountSave(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return errBadRequest("could not read the form")
	}
	on := form["email"]
	for _, k := range on {
		if !slices.Contains(store.NotifyKinds, k) {
			return errInvalid("email", "unknown kind of email %q", k)
		}
	}
	prefs := map[string]bool{}
	for _, k := range store.NotifyKinds {
		prefs[k] = slices.Contains(on, k)
	}
	if _, err := h.store.NotifySet(c.Request().Context(), userOf(c).ID, prefs); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/account?saved=1")
}
