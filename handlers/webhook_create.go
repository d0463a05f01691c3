package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// webhookCreate adds a subscription from the page form and shows its
// secret once.
func (h *Handler) webhookCreate(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return errBadRequest("could not read the form")
	}
	u := userOf(c)
	url, events := form.Get("url"), form["events"]
	team, err := adminTeam(u, form.Get("team"), task.ActManageWebhooks)
	if err != nil {
		return err
	}
	w, err := h.createWebhook(c, team.TeamID, url, form.Get("format"), events)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusUnprocessableEntity {
		return h.renderWebhookList(c, http.StatusUnprocessableEntity, pages.WebhookListProps{
			Error: apiErr.Message, URL: url, Selected: events, Format: form.Get("format"),
		})
	}
	if err != nil {
		return err
	}
	return h.renderWebhookList(c, http.StatusCreated, pages.WebhookListProps{NewID: w.ID, NewSecret: w.Secret})
}
