package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/views/pages"
)

// notifyLabels say each kind of email in words, in the page's order.
var notifyLabels = []pages.NotifyKind{
	{Key: "approval", Label: "an approval I may decide is requested (never for my own tasks)"},
	{Key: "decision", Label: "a step failed and waits for a decision I may make (retry, skip or roll back)"},
	{Key: "attention", Label: "a task needs an admin (undoing its steps failed; team admins)"},
	{Key: "ended", Label: "my task failed, or someone else cancelled it"},
}

// accountShow is the signed-in person's page: their email choices.
func (h *Handler) accountShow(c echo.Context) error {
	prefs, err := h.store.NotifyGet(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return h.renderAccount(c, prefs, c.QueryParam("saved") != "")
}

func (h *Handler) renderAccount(c echo.Context, prefs store.NotifyPrefs, saved bool) error {
	p := pages.AccountProps{Email: userOf(c).Email, MailOn: h.cfg.Mail.Enabled(), Saved: saved, CSRFToken: csrfToken(c)}
	for _, k := range notifyLabels {
		k.On = prefs[k.Key]
		p.Kinds = append(p.Kinds, k)
	}
	return h.render(c, http.StatusOK, "Account", "account", pages.Account(p))
}
