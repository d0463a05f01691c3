package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (h *Handler) apiArtifactMeta(c echo.Context) error {
	m, err := h.store.ArtifactGet(c.Request().Context(), userOf(c).TeamIDs(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": m.ID, "task_id": m.TaskID, "name": m.Name, "bytes": m.Bytes,
		"sha256": m.SHA256, "summary": m.Summary, "excerpt": m.Excerpt, "truncated": m.Truncated})
}
