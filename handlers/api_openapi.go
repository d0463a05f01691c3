package handlers

import (
	_ "embed"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
)

// openapiYAML is the API's description, written by hand as YAML (easier
// to read and review than JSON) and served as JSON.
//
//go:embed openapi.yaml
var openapiYAML []byte

var openapiJSON = sync.OnceValues(func() ([]byte, error) { return yamlToJSON(openapiYAML) })

// apiOpenAPI serves the OpenAPI 3.1 document; no auth (contract §3).
func (h *Handler) apiOpenAPI(c echo.Context) error {
	b, err := openapiJSON()
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.JSONBlob(http.StatusOK, b)
}
