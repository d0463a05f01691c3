package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/workflow/action/local"
)

// localCACRL serves the local CA's revocation list (DER), public like any CRL.
func (h *Handler) localCACRL(c echo.Context) error {
	der, err := local.CRL(c.Request().Context(), h.store)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "application/pkix-crl", der)
}
