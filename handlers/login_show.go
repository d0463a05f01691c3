package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/views/pages"
)

func (h *Handler) loginShow(c echo.Context) error {
	if userOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	return h.render(c, http.StatusOK, "Sign in", "", pages.Login(pages.LoginProps{
		CSRFToken: csrfToken(c), Next: safeNext(c.QueryParam("next")), SSO: h.sso != nil,
	}))
}
