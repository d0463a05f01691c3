package handlers

import (
	"errors"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// freezeEndError answers a refused end of a freeze: a freeze of one of the
// caller's teams where they may not manage freezes is 403, not 404.
func (h *Handler) freezeEndError(c echo.Context, err error) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	fs, lerr := h.store.FreezeList(c.Request().Context(), userOf(c).TeamIDs(), "", time.Time{})
	if lerr != nil {
		return err
	}
	for _, f := range fs {
		if f.ID == c.Param("id") {
			return forbiddenTo(task.ActManageFreezes)
		}
	}
	return err
}
